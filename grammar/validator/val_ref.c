/* val_ref: schema nodes and references.  A node is compiled the first
 * time something asks for its schema (so cycles need no special care: the
 * node exists before its keywords are read), and each $ref/$dynamicRef is
 * queued, then resolved by sxv_drain: find the resource (loading a remote
 * document through the resolver when needed), follow the fragment (a JSON
 * Pointer, percent-decoded, or an anchor), compile the target; repeated
 * until no reference is left. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/validator/val_internal.h"

static int nomem(sxv_comp *c)
{
    return sx_err_set(c->err, SX_ENOMEM, "out of memory compiling schema");
}

int sxv_node_for(sxv_comp *c, const json_t *s, const sxv_res *res,
                 const char *ptr, int dialect, unsigned vocab,
                 sxv_node **out)
{
    sxv_loc *loc = NULL;
    if (json_is_boolean(s)) {
        sxv_node *n = sxv_alloc(&c->v->arena, sizeof *n);
        if (!n)
            return nomem(c);
        n->boolean = json_is_true(s) ? 1 : 0;
        n->ptr = ptr;
        n->res = res;
        n->doc = res->doc;
        *out = n;
        return SX_OK;
    }
    if (!json_is_object(s)) {
        sxv_loc at = {res, ptr, dialect, vocab, NULL};
        return sxv_kw_error(c, &at, NULL, SX_EFORMAT,
                            "a schema must be an object or a boolean");
    }
    loc = sxv_map_get(&c->locs, &s, sizeof s);
    if (!loc) {
        int rc = sxv_walk(c, s, (sxv_res *)res, ptr, dialect, vocab, 0);
        if (rc)
            return rc;
        loc = sxv_map_get(&c->locs, &s, sizeof s);
        if (!loc)
            return sx_err_set(c->err, SX_EINTERNAL, "schema not indexed");
    }
    if (loc->node) {
        *out = loc->node;
        return SX_OK;
    }
    sxv_node *n = sxv_alloc(&c->v->arena, sizeof *n);
    if (!n)
        return nomem(c);
    loc->node = n;
    ((sxv_res *)loc->res)->used = 1;
    *out = n;
    return sxv_compile_node(c, n, s, loc);
}

int sxv_add_ref(sxv_comp *c, sxv_node *n, const sxv_loc *loc,
                const char *ref, int dynamic)
{
    char *abs = NULL;
    if (sxv_uri_resolve(loc->res->uri, ref, &abs))
        return nomem(c);
    sxv_pending *p = sxv_alloc(&c->v->arena, sizeof *p);
    char *u = sxv_strndup(&c->v->arena, abs, strlen(abs));
    free(abs);
    if (!p || !u)
        return nomem(c);
    p->node = n;
    p->uri = u;
    p->src = ref;
    p->dynamic = dynamic;
    p->dialect = loc->dialect;
    p->next = c->pending;
    c->pending = p;
    return SX_OK;
}

/* Follows a JSON Pointer fragment from a resource root. */
static int follow_pointer(sxv_comp *c, const sxv_pending *p, sxv_res *r,
                          const char *frag, sxv_node **out)
{
    const json_t *cur = r->json;
    const sxv_loc *last = sxv_map_get(&c->locs, &cur, sizeof cur);
    sxv_loc rootloc = {r, r->ptr, p->dialect, SXV_V_ALL, NULL};
    if (!last)
        last = &rootloc;
    sxv_buf rest = {0}, tok = {0};
    const char *q = frag;
    int rc = SX_OK;
    while (*q == '/') {
        q++;
        tok.len = 0;
        sxv_buf_add(&tok, "", 0);
        while (*q && *q != '/') {
            if (q[0] == '~' && q[1] == '0') {
                sxv_buf_addc(&tok, '~');
                q += 2;
            } else if (q[0] == '~' && q[1] == '1') {
                sxv_buf_addc(&tok, '/');
                q += 2;
            } else if (q[0] == '~') {
                rc = SX_EFORMAT;
                break;
            } else {
                sxv_buf_addc(&tok, *q++);
            }
        }
        if (rc || tok.oom)
            break;
        const json_t *next = NULL;
        if (json_is_object(cur)) {
            next = json_object_getn(cur, tok.p, tok.len);
        } else if (json_is_array(cur)) {
            char *e = NULL;
            unsigned long idx = strtoul(tok.p, &e, 10);
            if (tok.len && *e == '\0' && (tok.p[0] != '0' || tok.len == 1) &&
                tok.p[0] >= '0' && tok.p[0] <= '9')
                next = json_array_get(cur, idx);
        }
        if (!next) {
            rc = SX_ENOTFOUND;
            break;
        }
        cur = next;
        const sxv_loc *l = json_is_object(cur)
                               ? sxv_map_get(&c->locs, &cur, sizeof cur)
                               : NULL;
        if (l) {
            last = l;
            rest.len = 0;
            sxv_buf_add(&rest, "", 0);
        } else {
            sxv_buf_ptrseg(&rest, tok.p, tok.len);
        }
    }
    if (!rc && *q)
        rc = SX_EFORMAT;
    if (!rc && (rest.oom || tok.oom))
        rc = SX_ENOMEM;
    if (rc) {
        sxv_buf_free(&rest);
        sxv_buf_free(&tok);
        sxv_loc at = {p->node->res, p->node->ptr, p->dialect, 0, NULL};
        if (rc == SX_ENOMEM)
            return nomem(c);
        return sxv_kw_error(c, &at, p->dynamic ? "$dynamicRef" : "$ref", rc,
                            rc == SX_ENOTFOUND
                                ? "$ref \"%s\" points to nothing"
                                : "$ref \"%s\" is not a valid JSON Pointer",
                            p->src);
    }
    char *ptr = NULL;
    if (rest.len) {
        sxv_buf full = {0};
        sxv_buf_adds(&full, last->ptr);
        sxv_buf_add(&full, rest.p, rest.len);
        ptr = full.oom ? NULL : sxv_strndup(&c->v->arena, full.p, full.len);
        sxv_buf_free(&full);
    } else {
        ptr = (char *)last->ptr;
    }
    sxv_buf_free(&rest);
    sxv_buf_free(&tok);
    if (!ptr)
        return nomem(c);
    if (!json_is_object(cur) && !json_is_boolean(cur)) {
        sxv_loc at = {p->node->res, p->node->ptr, p->dialect, 0, NULL};
        return sxv_kw_error(c, &at, p->dynamic ? "$dynamicRef" : "$ref",
                            SX_EFORMAT, "$ref \"%s\" does not point to a "
                            "schema", p->src);
    }
    return sxv_node_for(c, cur, last->res, ptr, last->dialect, last->vocab,
                        out);
}

static int resolve_one(sxv_comp *c, sxv_pending *p)
{
    const char *hash = strchr(p->uri, '#');
    size_t blen = hash ? (size_t)(hash - p->uri) : strlen(p->uri);
    char *base = malloc(blen + 1);
    if (!base)
        return nomem(c);
    memcpy(base, p->uri, blen);
    base[blen] = '\0';
    sxv_res *r = sxv_map_get(&c->uris, base, blen);
    int rc = SX_OK;
    if (r == &c->ambiguous) {
        sxv_loc at = {p->node->res, p->node->ptr, p->dialect, 0, NULL};
        rc = sxv_kw_error(c, &at, p->dynamic ? "$dynamicRef" : "$ref",
                          SX_EFORMAT,
                          "\"%s\" names more than one schema (repeated $id)",
                          base);
        free(base);
        return rc;
    }
    if (!r) {
        rc = sxv_fetch(c, base, p->dialect, &r);
        if (rc) {
            free(base);
            sx_err_prefix(c->err, "%s \"%s\"",
                          p->dynamic ? "$dynamicRef" : "$ref", p->src);
            if (c->err)
                snprintf(c->err->pointer, sizeof c->err->pointer, "%s/%s",
                         p->node->ptr, p->dynamic ? "$dynamicRef" : "$ref");
            return rc;
        }
    }
    free(base);
    sxv_buf frag = {0};
    if (hash && sxv_pct_decode(&frag, hash + 1, strlen(hash + 1))) {
        sxv_buf_free(&frag);
        sxv_loc at = {p->node->res, p->node->ptr, p->dialect, 0, NULL};
        return sxv_kw_error(c, &at, p->dynamic ? "$dynamicRef" : "$ref",
                            SX_EFORMAT, "bad percent escape in \"%s\"",
                            p->src);
    }
    sxv_buf_add(&frag, "", 0);
    if (frag.oom) {
        sxv_buf_free(&frag);
        return nomem(c);
    }
    sxv_node *target = NULL;
    const char *dyn = NULL;
    if (frag.len == 0) {
        const sxv_loc *l = json_is_object(r->json)
                               ? sxv_map_get(&c->locs, &r->json, sizeof r->json)
                               : NULL;
        rc = sxv_node_for(c, r->json, r, r->ptr,
                          l ? l->dialect : p->dialect,
                          l ? l->vocab : SXV_V_ALL, &target);
    } else if (frag.p[0] == '/') {
        rc = follow_pointer(c, p, r, frag.p, &target);
    } else {
        sxv_anchor *a = r->anchors;
        while (a && strcmp(a->name, frag.p))
            a = a->next;
        if (!a || a->ambiguous) {
            sxv_loc at = {p->node->res, p->node->ptr, p->dialect, 0, NULL};
            rc = sxv_kw_error(c, &at, p->dynamic ? "$dynamicRef" : "$ref",
                              a ? SX_EFORMAT : SX_ENOTFOUND,
                              a ? "anchor \"%s\" of %s is defined twice "
                                  "(\"%s\")"
                                : "no anchor \"%s\" in %s for \"%s\"",
                              frag.p, r->uri, p->src);
        } else {
            const sxv_loc *l = sxv_map_get(&c->locs, &a->json, sizeof a->json);
            rc = sxv_node_for(c, a->json, r, l ? l->ptr : r->ptr,
                              l ? l->dialect : p->dialect,
                              l ? l->vocab : SXV_V_ALL, &target);
            if (!rc && p->dynamic && a->dynamic) {
                dyn = sxv_strndup(&c->v->arena, frag.p, frag.len);
                if (!dyn)
                    rc = nomem(c);
            }
        }
    }
    sxv_buf_free(&frag);
    if (rc)
        return rc;
    if (p->dynamic) {
        p->node->dynref = target;
        p->node->dyn_name = dyn;
    } else {
        p->node->ref = target;
    }
    return SX_OK;
}

/* Resolves queued references and compiles every dynamic anchor (a
 * $dynamicRef may land on any of them at run time) until both are done. */
int sxv_drain(sxv_comp *c)
{
    for (;;) {
        int work = 0;
        while (c->pending) {
            sxv_pending *p = c->pending;
            c->pending = p->next;
            int rc = resolve_one(c, p);
            if (rc)
                return rc;
            work = 1;
        }
        for (sxv_res *r = c->v->resources; r; r = r->next) {
            for (sxv_anchor *a = r->anchors; a; a = a->next) {
                if (!a->dynamic || a->node || !r->used || a->ambiguous)
                    continue;
                const sxv_loc *l = sxv_map_get(&c->locs, &a->json,
                                               sizeof a->json);
                if (!l)
                    continue;
                int rc = sxv_node_for(c, a->json, r, l->ptr, l->dialect,
                                      l->vocab, &a->node);
                if (rc)
                    return rc;
                work = 1;
            }
        }
        if (!work)
            return SX_OK;
    }
}

