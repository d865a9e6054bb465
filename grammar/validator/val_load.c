/* val_load: documents, dialects and resources.
 *
 * A document is walked once, keyword by keyword, so only real subschemas
 * count: an "$id" inside an enum or an unknown keyword is not an
 * identifier.  The walk records each schema object's place (resource, JSON
 * Pointer, dialect, vocabularies) and registers $id, $anchor and
 * $dynamicAnchor.  $schema picks the dialect (a custom meta-schema is
 * fetched for its $vocabulary).  Nodes and references are val_ref.c's. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/validator/val_internal.h"

#define SXV_ROOT_URI "strux:/root"
#define SXV_MAX_DOCS 200

int sxv_kw_error(sxv_comp *c, const sxv_loc *loc, const char *kw, int code,
                 const char *fmt, ...)
{
    char ptr[256], msg[400];
    va_list ap;
    snprintf(ptr, sizeof ptr, "%s%s%s", loc ? loc->ptr : "", kw ? "/" : "",
             kw ? kw : "");
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const sxv_doc *d = loc && loc->res ? loc->res->doc : NULL;
    if (d && d != c->v->docs_root)
        return sx_err_setp(c->err, code, ptr, -1, "%s (in %s)", msg, d->uri);
    return sx_err_setp(c->err, code, ptr, -1, "%s", msg);
}

static int nomem(sxv_comp *c)
{
    return sx_err_set(c->err, SX_ENOMEM, "out of memory compiling schema");
}

static char *ptr_join(sxv_comp *c, const char *base, const char *seg,
                      size_t n)
{
    sxv_buf b = {0};
    sxv_buf_adds(&b, base);
    sxv_buf_ptrseg(&b, seg, n);
    char *p = b.oom ? NULL : sxv_strndup(&c->v->arena, b.p, b.len);
    sxv_buf_free(&b);
    return p;
}

static char *ptr_join_idx(sxv_comp *c, const char *base, const char *kw,
                          size_t i)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%zu", i);
    char *k = ptr_join(c, base, kw, strlen(kw));
    return k ? ptr_join(c, k, tmp, (size_t)n) : NULL;
}

/* ---- resources and anchors ------------------------------------------------- */

static sxv_res *new_res(sxv_comp *c, const char *uri, const json_t *json,
                        const sxv_doc *doc, const char *ptr)
{
    sxv_res *r = sxv_alloc(&c->v->arena, sizeof *r);
    if (!r)
        return NULL;
    r->uri = sxv_strndup(&c->v->arena, uri, strlen(uri));
    r->json = json;
    r->doc = doc;
    r->ptr = ptr;
    r->next = c->v->resources;
    c->v->resources = r;
    return r->uri ? r : NULL;
}

/* Registers r under uri.  Real-world schemas repeat $id values (tools
 * generate them from paths); that is only an error when a $ref uses one,
 * so a repeated URI is marked ambiguous rather than refused here. */
static int register_uri(sxv_comp *c, const sxv_loc *at, const char *uri,
                        sxv_res *r)
{
    (void)at;
    sxv_res *old = sxv_map_get(&c->uris, uri, strlen(uri));
    if (old && (old == r || old->json == r->json || old == &c->ambiguous))
        return SX_OK;
    return sxv_map_put(&c->uris, uri, strlen(uri), old ? &c->ambiguous : r)
               ? nomem(c)
               : SX_OK;
}

static int anchor_name_ok(const char *s)
{
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
        return 0;
    for (s++; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
              (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' ||
              *s == '.'))
            return 0;
    return 1;
}

static int add_anchor(sxv_comp *c, const sxv_loc *at, const char *kw,
                      sxv_res *r, const char *name, const json_t *s,
                      int dynamic)
{
    (void)at;
    (void)kw;
    for (sxv_anchor *a = r->anchors; a; a = a->next) {
        if (strcmp(a->name, name))
            continue;
        if (a->json != s)
            a->ambiguous = 1; /* an error only if something uses it */
        a->dynamic |= dynamic;
        return SX_OK;
    }
    sxv_anchor *a = sxv_alloc(&c->v->arena, sizeof *a);
    if (!a || !(a->name = sxv_strndup(&c->v->arena, name, strlen(name))))
        return nomem(c);
    a->json = s;
    a->dynamic = dynamic;
    a->next = r->anchors;
    r->anchors = a;
    return SX_OK;
}

/* ---- dialects --------------------------------------------------------------- */


static int vocab_bits(sxv_comp *c, const sxv_loc *at, const json_t *voc,
                      int dialect, unsigned *vocab)
{
    static const struct {
        const char *uri;
        unsigned bits;
    } known[] = {
        {"https://json-schema.org/draft/2020-12/vocab/core", SXV_V_CORE},
        {"https://json-schema.org/draft/2020-12/vocab/applicator",
         SXV_V_APPLICATOR},
        {"https://json-schema.org/draft/2020-12/vocab/unevaluated",
         SXV_V_UNEVALUATED},
        {"https://json-schema.org/draft/2020-12/vocab/validation",
         SXV_V_VALIDATION},
        {"https://json-schema.org/draft/2020-12/vocab/meta-data", 0},
        {"https://json-schema.org/draft/2020-12/vocab/content", 0},
        {"https://json-schema.org/draft/2020-12/vocab/format-annotation",
         SXV_V_FORMAT},
        {"https://json-schema.org/draft/2020-12/vocab/format-assertion",
         SXV_V_FORMAT | SXV_V_FORMAT_ASSERT},
        {"https://json-schema.org/draft/2019-09/vocab/core", SXV_V_CORE},
        {"https://json-schema.org/draft/2019-09/vocab/applicator",
         SXV_V_APPLICATOR | SXV_V_UNEVALUATED},
        {"https://json-schema.org/draft/2019-09/vocab/validation",
         SXV_V_VALIDATION},
        {"https://json-schema.org/draft/2019-09/vocab/meta-data", 0},
        {"https://json-schema.org/draft/2019-09/vocab/content", 0},
        {"https://json-schema.org/draft/2019-09/vocab/format", SXV_V_FORMAT},
    };
    (void)dialect;
    if (!json_is_object(voc))
        return sxv_kw_error(c, at, "$vocabulary", SX_EFORMAT,
                            "$vocabulary must be an object");
    unsigned bits = SXV_V_CORE;
    const char *k;
    json_t *val;
    json_object_foreach((json_t *)voc, k, val) {
        size_t i;
        for (i = 0; i < sizeof known / sizeof known[0]; i++)
            if (!strcmp(k, known[i].uri))
                break;
        if (i < sizeof known / sizeof known[0])
            bits |= known[i].bits;
        else if (json_is_true(val))
            return sxv_kw_error(c, at, "$vocabulary", SX_EUNSUPPORTED,
                                "required vocabulary \"%s\" is not supported",
                                k);
    }
    *vocab = bits;
    return SX_OK;
}

/* Dialect and vocabularies named by a $schema value. */
static int schema_dialect(sxv_comp *c, const sxv_loc *at, const char *uri,
                          int *dialect, unsigned *vocab, unsigned depth)
{
    static const struct {
        const char *tail;
        int dialect;
    } known[] = {
        {"json-schema.org/draft/2020-12/schema", SXV_D2020},
        {"json-schema.org/draft/2019-09/schema", SXV_D2019},
        {"json-schema.org/draft-07/schema", SXV_D7},
        {"json-schema.org/draft-06/schema", SXV_D6},
        {"json-schema.org/draft-04/schema", SXV_D4},
    };
    const char *p = uri;
    if (!strncmp(p, "http://", 7))
        p += 7;
    else if (!strncmp(p, "https://", 8))
        p += 8;
    size_t n = strlen(p);
    if (n && p[n - 1] == '#')
        n--;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (strlen(known[i].tail) == n && !memcmp(p, known[i].tail, n)) {
            *dialect = known[i].dialect;
            *vocab = SXV_V_ALL;
            return SX_OK;
        }
    }
    if (!strncmp(p, "json-schema.org/", 16))
        return sxv_kw_error(c, at, "$schema", SX_EUNSUPPORTED,
                            "unsupported dialect \"%s\"", uri);
    if (depth > 4)
        return sxv_kw_error(c, at, "$schema", SX_ELIMIT,
                            "meta-schema chain too long at \"%s\"", uri);
    /* a custom meta-schema: its own $schema gives the dialect, its
     * $vocabulary the keywords in use */
    char *abs = NULL;
    if (sxv_uri_resolve(at && at->res ? at->res->uri : SXV_ROOT_URI, uri,
                        &abs))
        return nomem(c);
    char *hash = strchr(abs, '#');
    if (hash)
        *hash = '\0';
    sxv_res *r = sxv_map_get(&c->uris, abs, strlen(abs));
    int rc = SX_OK;
    if (!r)
        rc = sxv_fetch(c, abs, SXV_D2020, &r);
    free(abs);
    if (rc) {
        sx_err_prefix(c->err, "$schema \"%s\"", uri);
        if (c->err)
            snprintf(c->err->pointer, sizeof c->err->pointer, "%s/$schema",
                     at ? at->ptr : "");
        return rc;
    }
    const json_t *ms = r->json;
    const json_t *own = json_is_object(ms) ? json_object_get(ms, "$schema")
                                           : NULL;
    int d = SXV_D2020;
    unsigned v = SXV_V_ALL;
    if (json_is_string(own) && strcmp(json_string_value(own), uri)) {
        rc = schema_dialect(c, at, json_string_value(own), &d, &v, depth + 1);
        if (rc)
            return rc;
    }
    const json_t *voc = json_is_object(ms) ? json_object_get(ms, "$vocabulary")
                                           : NULL;
    if (voc && d >= SXV_D2019) {
        rc = vocab_bits(c, at, voc, d, &v);
        if (rc)
            return rc;
    }
    *dialect = d;
    *vocab = v;
    return SX_OK;
}

/* ---- walking a document ------------------------------------------------------ */


static int walk_kw(sxv_comp *c, const json_t *s, sxv_res *res,
                   const char *ptr, int dialect, unsigned vocab,
                   unsigned depth, const char *kw, int kind)
{
    const json_t *v = json_object_get(s, kw);
    if (!v)
        return SX_OK;
    char *kp = ptr_join(c, ptr, kw, strlen(kw));
    if (!kp)
        return nomem(c);
    int rc = SX_OK;
    if (kind == 0 || (kind == 3 && !json_is_array(v))) {
        rc = sxv_walk(c, v, res, kp, dialect, vocab, depth + 1);
    } else if (kind == 1 || kind == 3) {
        if (!json_is_array(v))
            return SX_OK; /* reported when compiled */
        for (size_t i = 0; !rc && i < json_array_size(v); i++) {
            char *ip = ptr_join_idx(c, ptr, kw, i);
            if (!ip)
                return nomem(c);
            rc = sxv_walk(c, json_array_get(v, i), res, ip, dialect, vocab,
                      depth + 1);
        }
    } else {
        if (!json_is_object(v))
            return SX_OK;
        for (void *it = json_object_iter((json_t *)v); !rc && it;
             it = json_object_iter_next((json_t *)v, it)) {
            const json_t *sub = json_object_iter_value(it);
            if (kind == 4 && !json_is_object(sub) && !json_is_boolean(sub))
                continue; /* "dependencies": a property list */
            char *mp = ptr_join(c, kp, json_object_iter_key(it),
                                json_object_iter_key_len(it));
            if (!mp)
                return nomem(c);
            rc = sxv_walk(c, sub, res, mp, dialect, vocab, depth + 1);
        }
    }
    return rc;
}

int sxv_walk(sxv_comp *c, const json_t *s, sxv_res *res, const char *ptr,
             int dialect, unsigned vocab, unsigned depth)
{
    if (!json_is_object(s))
        return SX_OK;
    if (sxv_map_get(&c->locs, &s, sizeof s))
        return SX_OK;
    sxv_loc probe = {res, ptr, dialect, vocab, NULL};
    if (depth > c->v->max_depth)
        return sxv_kw_error(c, &probe, NULL, SX_ELIMIT,
                            "schema nested deeper than %u levels",
                            c->v->max_depth);
    int rc;
    int legacy_ref = dialect <= SXV_D7 && json_object_get(s, "$ref");
    const json_t *id = json_object_get(s, dialect == SXV_D4 ? "id" : "$id");
    if (legacy_ref || !json_is_string(id))
        id = NULL;
    int is_root = s == res->doc->root;
    const json_t *sch = json_object_get(s, "$schema");
    if (id && !is_root && json_is_string(sch)) {
        rc = schema_dialect(c, &probe, json_string_value(sch), &dialect,
                            &vocab, 0);
        if (rc)
            return rc;
        probe.dialect = dialect;
        probe.vocab = vocab;
    }
    if (id) {
        const char *ids = json_string_value(id);
        if (dialect <= SXV_D7 && ids[0] == '#') {
            if (ids[1] && (rc = add_anchor(c, &probe, "$id", res, ids + 1, s,
                                           0)))
                return rc;
        } else {
            char *abs = NULL;
            if (sxv_uri_resolve(res->uri, ids, &abs))
                return nomem(c);
            char *hash = strchr(abs, '#');
            char *frag = NULL;
            if (hash) {
                *hash = '\0';
                frag = hash + 1;
            }
            if (frag && *frag && dialect >= SXV_D2019) {
                free(abs);
                return sxv_kw_error(c, &probe, "$id", SX_EFORMAT,
                                    "$id must not carry a fragment");
            }
            if (!is_root && !strcmp(abs, res->uri)) {
                /* "$id": "" or "#": names the enclosing resource again */
            } else if (is_root) {
                char *u = sxv_strndup(&c->v->arena, abs, strlen(abs));
                if (!u) {
                    free(abs);
                    return nomem(c);
                }
                res->uri = u;
            } else {
                res = new_res(c, abs, s, res->doc, ptr);
                if (!res) {
                    free(abs);
                    return nomem(c);
                }
            }
            probe.res = res;
            rc = register_uri(c, &probe, res->uri, res);
            if (!rc && frag && *frag)
                rc = add_anchor(c, &probe, "$id", res, frag, s, 0);
            free(abs);
            if (rc)
                return rc;
        }
    }
    if (dialect >= SXV_D2019 && !legacy_ref) {
        const json_t *a = json_object_get(s, "$anchor");
        if (json_is_string(a)) {
            if (!anchor_name_ok(json_string_value(a)))
                return sxv_kw_error(c, &probe, "$anchor", SX_EFORMAT,
                                    "invalid anchor name \"%s\"",
                                    json_string_value(a));
            if ((rc = add_anchor(c, &probe, "$anchor", res,
                                 json_string_value(a), s, 0)))
                return rc;
        }
        a = dialect >= SXV_D2020 ? json_object_get(s, "$dynamicAnchor") : NULL;
        if (json_is_string(a)) {
            if (!anchor_name_ok(json_string_value(a)))
                return sxv_kw_error(c, &probe, "$dynamicAnchor", SX_EFORMAT,
                                    "invalid anchor name \"%s\"",
                                    json_string_value(a));
            if ((rc = add_anchor(c, &probe, "$dynamicAnchor", res,
                                 json_string_value(a), s, 1)))
                return rc;
        }
    }
    sxv_loc *loc = sxv_alloc(&c->v->arena, sizeof *loc);
    if (!loc)
        return nomem(c);
    *loc = probe;
    if (sxv_map_put(&c->locs, &s, sizeof s, loc))
        return nomem(c);

    /* kinds: 0 one schema, 1 array of schemas, 2 map of schemas,
     * 3 schema or array (items), 4 map of schemas or lists */
    static const struct {
        const char *kw;
        int kind;
    } subs[] = {
        {"$defs", 2},          {"definitions", 2},     {"properties", 2},
        {"patternProperties", 2}, {"dependentSchemas", 2}, {"dependencies", 4},
        {"additionalProperties", 0}, {"propertyNames", 0}, {"not", 0},
        {"if", 0},             {"then", 0},            {"else", 0},
        {"contains", 0},       {"additionalItems", 0}, {"unevaluatedItems", 0},
        {"unevaluatedProperties", 0}, {"items", 3},    {"prefixItems", 1},
        {"allOf", 1},          {"anyOf", 1},           {"oneOf", 1},
    };
    size_t nsubs = legacy_ref ? 2 : sizeof subs / sizeof subs[0];
    for (size_t i = 0; i < nsubs; i++) {
        rc = walk_kw(c, s, res, ptr, dialect, vocab, depth, subs[i].kw,
                     subs[i].kind);
        if (rc)
            return rc;
    }
    return SX_OK;
}

/* Takes over `root` (freed with the validator even on error). */
static int load_doc(sxv_comp *c, json_t *root, const char *uri, int dialect,
                    sxv_res **out)
{
    sxv_doc *d = sxv_alloc(&c->v->arena, sizeof *d);
    if (!d) {
        json_decref(root);
        return nomem(c);
    }
    d->root = root;
    d->next = c->v->docs;
    c->v->docs = d;
    if (!c->v->docs_root)
        c->v->docs_root = d;
    d->uri = sxv_strndup(&c->v->arena, uri, strlen(uri));
    if (!d->uri)
        return nomem(c);
    c->ndocs++;
    unsigned vocab = SXV_V_ALL;
    sxv_res *r = new_res(c, uri, root, d, "");
    if (!r)
        return nomem(c);
    sxv_loc at = {r, "", dialect, vocab, NULL};
    if (!json_is_object(root) && !json_is_boolean(root))
        return sxv_kw_error(c, &at, NULL, SX_EFORMAT,
                            "a schema must be an object or a boolean");
    int rc = register_uri(c, &at, uri, r);
    if (rc)
        return rc;
    const json_t *sch = json_is_object(root) ? json_object_get(root, "$schema")
                                             : NULL;
    if (sch) {
        if (!json_is_string(sch))
            return sxv_kw_error(c, &at, "$schema", SX_EFORMAT,
                                "$schema must be a string");
        rc = schema_dialect(c, &at, json_string_value(sch), &dialect, &vocab,
                            0);
        if (rc)
            return rc;
    }
    rc = sxv_walk(c, root, r, "", dialect, vocab, 0);
    if (rc)
        return rc;
    *out = r;
    return SX_OK;
}

int sxv_fetch(sxv_comp *c, const char *uri, int dialect, sxv_res **out)
{
    if (!c->opts->resolve)
        return sx_err_set(c->err, SX_ENOTFOUND,
                          "cannot resolve \"%s\": no resolver configured",
                          uri);
    if (c->ndocs >= SXV_MAX_DOCS)
        return sx_err_set(c->err, SX_ELIMIT,
                          "more than %d documents referenced", SXV_MAX_DOCS);
    json_t *doc = NULL;
    sx_error e;
    sx_err_clear(&e);
    int rc = c->opts->resolve(c->opts->resolve_ctx, uri, &doc, &e);
    if (rc || !doc) {
        json_decref(doc);
        if (!rc || rc == SX_ENOTFOUND)
            return sx_err_set(c->err, SX_ENOTFOUND,
                              "cannot resolve \"%s\"%s%s", uri,
                              e.msg[0] ? ": " : "", e.msg);
        return sx_err_set(c->err, rc, "cannot resolve \"%s\": %s", uri,
                          e.msg[0] ? e.msg : sx_strerror(rc));
    }
    if (!sxv_json_depth_ok(doc, c->max_json_depth)) {
        json_decref(doc);
        return sx_err_set(c->err, SX_ELIMIT,
                          "document \"%s\" is nested too deeply", uri);
    }
    json_t *copy = json_deep_copy(doc);
    json_decref(doc);
    if (!copy)
        return nomem(c);
    return load_doc(c, copy, uri, dialect, out);
}

int sxv_build(sx_validator *v, json_t *schema, const sx_val_opts *opts,
              sx_error *err)
{
    sxv_comp c;
    memset(&c, 0, sizeof c);
    c.v = v;
    c.opts = opts;
    c.err = err;
    c.max_json_depth = 2 * v->max_depth + 8;
    int dialect = opts->dialect == SX_VAL_DRAFT7 ? SXV_D7 : SXV_D2020;
    sxv_res *r = NULL;
    int rc = load_doc(&c, schema, SXV_ROOT_URI, dialect, &r);
    if (!rc) {
        const sxv_loc *l = json_is_object(r->json)
                               ? sxv_map_get(&c.locs, &r->json, sizeof r->json)
                               : NULL;
        rc = sxv_node_for(&c, r->json, r, "", l ? l->dialect : dialect,
                          l ? l->vocab : SXV_V_ALL, &v->root);
    }
    if (!rc)
        rc = sxv_drain(&c);
    sxv_map_free(&c.locs);
    sxv_map_free(&c.uris);
    return rc;
}
