/* val_compile: reads the keywords of one schema object into an sxv_node,
 * checking each value's shape (a malformed keyword is a compile error
 * naming its JSON Pointer, never silently skipped).  Which keywords exist
 * depends on the dialect and the vocabularies of the schema's location. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/validator/val_internal.h"

static int nomem(sxv_comp *c)
{
    return sx_err_set(c->err, SX_ENOMEM, "out of memory compiling schema");
}

static int child(sxv_comp *c, const sxv_loc *loc, const json_t *v,
                 const char *kw, const char *key, size_t klen, long idx,
                 sxv_node **out)
{
    const char *ptr = "";
    if (!json_is_object(v) || !sxv_map_get(&c->locs, &v, sizeof v)) {
        sxv_buf b = {0};
        sxv_buf_adds(&b, loc->ptr);
        sxv_buf_ptrseg(&b, kw, strlen(kw));
        if (key)
            sxv_buf_ptrseg(&b, key, klen);
        else if (idx >= 0)
            sxv_buf_addf(&b, "/%ld", idx);
        ptr = b.oom ? NULL : sxv_strndup(&c->v->arena, b.p, b.len);
        sxv_buf_free(&b);
        if (!ptr)
            return nomem(c);
    }
    return sxv_node_for(c, v, loc->res, ptr, loc->dialect, loc->vocab, out);
}

static int one(sxv_comp *c, const sxv_loc *loc, const json_t *s,
               const char *kw, sxv_node **out)
{
    const json_t *v = json_object_get(s, kw);
    if (!v)
        return SX_OK;
    if (!json_is_object(v) && !json_is_boolean(v))
        return sxv_kw_error(c, loc, kw, SX_EFORMAT,
                            "\"%s\" must be a schema", kw);
    return child(c, loc, v, kw, NULL, 0, -1, out);
}

static int list(sxv_comp *c, const sxv_loc *loc, const json_t *s,
                const char *kw, sxv_node ***out, size_t *nout)
{
    const json_t *v = json_object_get(s, kw);
    if (!v)
        return SX_OK;
    size_t n = json_array_size(v);
    if (!json_is_array(v) || n == 0)
        return sxv_kw_error(c, loc, kw, SX_EFORMAT,
                            "\"%s\" must be a non-empty array of schemas", kw);
    sxv_node **a = sxv_alloc(&c->v->arena, n * sizeof *a);
    if (!a)
        return nomem(c);
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(v, i);
        if (!json_is_object(e) && !json_is_boolean(e))
            return sxv_kw_error(c, loc, kw, SX_EFORMAT,
                                "\"%s\" item %zu must be a schema", kw, i);
        int rc = child(c, loc, e, kw, NULL, 0, (long)i, &a[i]);
        if (rc)
            return rc;
    }
    *out = a;
    *nout = n;
    return SX_OK;
}

static int str_cmp(const sxv_str *a, const char *s, size_t n)
{
    size_t m = a->n < n ? a->n : n;
    int r = memcmp(a->s, s, m);
    if (r)
        return r;
    return a->n < n ? -1 : a->n > n;
}

static int prop_cmp(const void *x, const void *y)
{
    const sxv_prop *a = x, *b = y;
    return str_cmp(&a->name, b->name.s, b->name.n);
}

static int count(sxv_comp *c, const sxv_loc *loc, const json_t *s,
                 const char *kw, size_t *out)
{
    const json_t *v = json_object_get(s, kw);
    if (!v)
        return SX_OK;
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        uintmax_t x = (uintmax_t)json_integer_value(v);
        *out = x > SIZE_MAX ? SIZE_MAX : (size_t)x;
        return SX_OK;
    }
    if (json_is_real(v) && sxv_num_is_integer(NULL, v) && json_real_value(v) >= 0) {
        double d = json_real_value(v);
        *out = d >= 1.8e19 ? SIZE_MAX : (size_t)d;
        return SX_OK;
    }
    return sxv_kw_error(c, loc, kw, SX_EFORMAT,
                        "\"%s\" must be a non-negative integer", kw);
}

static int number(sxv_comp *c, const sxv_loc *loc, const json_t *s,
                  const char *kw, const json_t **out)
{
    const json_t *v = json_object_get(s, kw);
    if (!v)
        return SX_OK;
    if (!json_is_number(v))
        return sxv_kw_error(c, loc, kw, SX_EFORMAT,
                            "\"%s\" must be a number", kw);
    *out = v;
    return SX_OK;
}

static int str_list(sxv_comp *c, const sxv_loc *loc, const char *kw,
                    const json_t *v, sxv_str **out, size_t *nout)
{
    if (!json_is_array(v))
        return sxv_kw_error(c, loc, kw, SX_EFORMAT,
                            "\"%s\" must be an array of strings", kw);
    size_t n = json_array_size(v);
    sxv_str *a = sxv_alloc(&c->v->arena, (n ? n : 1) * sizeof *a);
    if (!a)
        return nomem(c);
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(v, i);
        if (!json_is_string(e))
            return sxv_kw_error(c, loc, kw, SX_EFORMAT,
                                "\"%s\" must be an array of strings", kw);
        a[i].s = json_string_value(e);
        a[i].n = json_string_length(e);
    }
    *out = a;
    *nout = n;
    return SX_OK;
}

/* ---- keyword families ----------------------------------------------------------- */

static int type_bits(const char *t)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {
        {"null", SXV_T_NULL},     {"boolean", SXV_T_BOOLEAN},
        {"object", SXV_T_OBJECT}, {"array", SXV_T_ARRAY},
        {"number", SXV_T_NUMBER}, {"string", SXV_T_STRING},
        {"integer", SXV_T_INTEGER},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(t, names[i].name))
            return (int)names[i].bit;
    return 0;
}

static int compile_type(sxv_comp *c, sxv_node *n, const json_t *s,
                        const sxv_loc *loc)
{
    const json_t *t = json_object_get(s, "type");
    if (!t)
        return SX_OK;
    if (json_is_string(t)) {
        int b = type_bits(json_string_value(t));
        if (!b)
            return sxv_kw_error(c, loc, "type", SX_EFORMAT,
                                "unknown type \"%s\"", json_string_value(t));
        n->types = (unsigned)b;
        return SX_OK;
    }
    if (!json_is_array(t) || json_array_size(t) == 0)
        return sxv_kw_error(c, loc, "type", SX_EFORMAT,
                            "\"type\" must be a type name or an array of them");
    for (size_t i = 0; i < json_array_size(t); i++) {
        const json_t *e = json_array_get(t, i);
        int b = json_is_string(e) ? type_bits(json_string_value(e)) : 0;
        if (!b)
            return sxv_kw_error(c, loc, "type", SX_EFORMAT,
                                "\"type\" item %zu is not a type name", i);
        n->types |= (unsigned)b;
    }
    return SX_OK;
}

static int compile_regex(sxv_comp *c, const sxv_loc *loc, const char *kw,
                         const char *key, const char *src, size_t len,
                         pcre2_code **out)
{
    sx_error e;
    sx_err_clear(&e);
    int rc = sxv_regex_compile(src, len, out, &e);
    if (rc) {
        if (key) {
            sxv_buf b = {0};
            sxv_buf_adds(&b, kw);
            sxv_buf_ptrseg(&b, key, strlen(key));
            rc = sxv_kw_error(c, loc, b.oom ? kw : b.p, rc, "%s", e.msg);
            sxv_buf_free(&b);
            return rc;
        }
        return sxv_kw_error(c, loc, kw, rc, "%s", e.msg);
    }
    if (sxv_keep_regex(c->v, *out)) {
        pcre2_code_free(*out);
        *out = NULL;
        return nomem(c);
    }
    return SX_OK;
}

static int compile_validation(sxv_comp *c, sxv_node *n, const json_t *s,
                              const sxv_loc *loc)
{
    int rc, d = loc->dialect;
    if ((rc = compile_type(c, n, s, loc)))
        return rc;
    n->int_strict = d == SXV_D4;
    const json_t *v = json_object_get(s, "enum");
    if (v) {
        if (!json_is_array(v))
            return sxv_kw_error(c, loc, "enum", SX_EFORMAT,
                                "\"enum\" must be an array");
        n->enum_ = v;
    }
    if (d >= SXV_D6)
        n->const_ = json_object_get(s, "const");

    if ((rc = number(c, loc, s, "multipleOf", &n->multiple_of)))
        return rc;
    if (n->multiple_of &&
        (json_is_integer(n->multiple_of) ? json_integer_value(n->multiple_of) <= 0
                                         : json_real_value(n->multiple_of) <= 0))
        return sxv_kw_error(c, loc, "multipleOf", SX_EFORMAT,
                            "\"multipleOf\" must be greater than 0");
    if ((rc = number(c, loc, s, "minimum", &n->minimum)) ||
        (rc = number(c, loc, s, "maximum", &n->maximum)))
        return rc;
    static const char *const xs[2] = {"exclusiveMinimum", "exclusiveMaximum"};
    for (int k = 0; k < 2; k++) {
        v = json_object_get(s, xs[k]);
        if (!v)
            continue;
        if (json_is_boolean(v)) {
            /* draft-04: a flag that makes minimum/maximum exclusive */
            if (k == 0)
                n->xmin_bool = json_is_true(v);
            else
                n->xmax_bool = json_is_true(v);
        } else if ((rc = number(c, loc, s, xs[k],
                                k == 0 ? &n->xminimum : &n->xmaximum))) {
            return rc;
        }
    }

    if ((rc = count(c, loc, s, "minLength", &n->min_len)) ||
        (rc = count(c, loc, s, "maxLength", &n->max_len)) ||
        (rc = count(c, loc, s, "minItems", &n->min_items)) ||
        (rc = count(c, loc, s, "maxItems", &n->max_items)) ||
        (rc = count(c, loc, s, "minProperties", &n->min_props)) ||
        (rc = count(c, loc, s, "maxProperties", &n->max_props)))
        return rc;
    if (d >= SXV_D2019) {
        if ((rc = count(c, loc, s, "minContains", &n->min_contains)) ||
            (rc = count(c, loc, s, "maxContains", &n->max_contains)))
            return rc;
    }

    v = json_object_get(s, "pattern");
    if (v) {
        if (!json_is_string(v))
            return sxv_kw_error(c, loc, "pattern", SX_EFORMAT,
                                "\"pattern\" must be a string");
        n->pattern_src = json_string_value(v);
        if ((rc = compile_regex(c, loc, "pattern", NULL, n->pattern_src,
                                json_string_length(v), &n->pattern)))
            return rc;
    }
    v = json_object_get(s, "uniqueItems");
    if (v) {
        if (!json_is_boolean(v))
            return sxv_kw_error(c, loc, "uniqueItems", SX_EFORMAT,
                                "\"uniqueItems\" must be a boolean");
        n->unique = json_is_true(v);
    }
    v = json_object_get(s, "required");
    if (v && (rc = str_list(c, loc, "required", v, &n->required,
                            &n->nrequired)))
        return rc;
    v = d >= SXV_D2019 ? json_object_get(s, "dependentRequired") : NULL;
    if (v) {
        if (!json_is_object(v))
            return sxv_kw_error(c, loc, "dependentRequired", SX_EFORMAT,
                                "\"dependentRequired\" must be an object");
        /* appended to what "dependencies" may have put there */
        size_t m = json_object_size(v), i = n->ndep_req;
        sxv_dreq *all = sxv_alloc(&c->v->arena, (i + m + 1) * sizeof *all);
        if (!all)
            return nomem(c);
        if (i)
            memcpy(all, n->dep_req, i * sizeof *all);
        n->dep_req = all;
        for (void *it = json_object_iter((json_t *)v); it;
             it = json_object_iter_next((json_t *)v, it), i++) {
            sxv_dreq *r = &n->dep_req[i];
            r->name.s = json_object_iter_key(it);
            r->name.n = json_object_iter_key_len(it);
            r->kw = "dependentRequired";
            if ((rc = str_list(c, loc, "dependentRequired",
                               json_object_iter_value(it), &r->req, &r->nreq)))
                return rc;
        }
        n->ndep_req = i;
    }
    return SX_OK;
}

static int compile_deps(sxv_comp *c, sxv_node *n, const json_t *s,
                        const sxv_loc *loc)
{
    int rc;
    const json_t *ds = loc->dialect >= SXV_D2019
                           ? json_object_get(s, "dependentSchemas")
                           : NULL;
    const json_t *dp = json_object_get(s, "dependencies");
    if (ds && !json_is_object(ds))
        return sxv_kw_error(c, loc, "dependentSchemas", SX_EFORMAT,
                            "\"dependentSchemas\" must be an object");
    if (dp && !json_is_object(dp))
        return sxv_kw_error(c, loc, "dependencies", SX_EFORMAT,
                            "\"dependencies\" must be an object");
    size_t ns = (ds ? json_object_size(ds) : 0) + (dp ? json_object_size(dp) : 0);
    if (!ns)
        return SX_OK;
    n->dep_sch = sxv_alloc(&c->v->arena, ns * sizeof *n->dep_sch);
    if (!n->dep_sch)
        return nomem(c);
    size_t nreq = n->ndep_req + (dp ? json_object_size(dp) : 0);
    if (dp) {
        sxv_dreq *r = sxv_alloc(&c->v->arena, (nreq ? nreq : 1) * sizeof *r);
        if (!r)
            return nomem(c);
        if (n->ndep_req)
            memcpy(r, n->dep_req, n->ndep_req * sizeof *r);
        n->dep_req = r;
    }
    const json_t *src[2] = {ds, dp};
    const char *kw[2] = {"dependentSchemas", "dependencies"};
    for (int k = 0; k < 2; k++) {
        if (!src[k])
            continue;
        for (void *it = json_object_iter((json_t *)src[k]); it;
             it = json_object_iter_next((json_t *)src[k], it)) {
            const char *key = json_object_iter_key(it);
            size_t kl = json_object_iter_key_len(it);
            const json_t *v = json_object_iter_value(it);
            if (k == 1 && json_is_array(v)) {
                sxv_dreq *r = &n->dep_req[n->ndep_req];
                r->name.s = key;
                r->name.n = kl;
                r->kw = "dependencies";
                if ((rc = str_list(c, loc, "dependencies", v, &r->req,
                                   &r->nreq)))
                    return rc;
                n->ndep_req++;
                continue;
            }
            if (!json_is_object(v) && !json_is_boolean(v))
                return sxv_kw_error(c, loc, kw[k], SX_EFORMAT,
                                    "\"%s\" values must be schemas%s", kw[k],
                                    k ? " or arrays of names" : "");
            sxv_dsch *e = &n->dep_sch[n->ndep_sch];
            e->name.s = key;
            e->name.n = kl;
            e->kw = kw[k];
            if ((rc = child(c, loc, v, kw[k], key, kl, -1, &e->node)))
                return rc;
            n->ndep_sch++;
        }
    }
    return SX_OK;
}

static int compile_items(sxv_comp *c, sxv_node *n, const json_t *s,
                         const sxv_loc *loc)
{
    int rc, d = loc->dialect;
    const json_t *items = json_object_get(s, "items");
    const json_t *prefix = d >= SXV_D2020 ? json_object_get(s, "prefixItems")
                                          : NULL;
    if (prefix) {
        if (json_is_array(items))
            return sxv_kw_error(c, loc, "items", SX_EFORMAT,
                                "\"items\" must be a schema beside "
                                "\"prefixItems\"");
        if ((rc = list(c, loc, s, "prefixItems", &n->prefix, &n->nprefix)))
            return rc;
        n->prefix_kw = "prefixItems";
    }
    if (json_is_array(items)) {
        /* draft-07 tuple form (read the same way in a 2020-12 schema,
         * where an array is no schema at all) */
        if (json_array_size(items) &&
            (rc = list(c, loc, s, "items", &n->prefix, &n->nprefix)))
            return rc;
        n->prefix_kw = "items";
        n->items_kw = "additionalItems";
        return one(c, loc, s, "additionalItems", &n->items);
    }
    n->items_kw = "items";
    return one(c, loc, s, "items", &n->items);
}

static int compile_properties(sxv_comp *c, sxv_node *n, const json_t *s,
                              const sxv_loc *loc)
{
    int rc;
    const json_t *v = json_object_get(s, "properties");
    if (v) {
        if (!json_is_object(v))
            return sxv_kw_error(c, loc, "properties", SX_EFORMAT,
                                "\"properties\" must be an object");
        size_t m = json_object_size(v), i = 0;
        n->props = sxv_alloc(&c->v->arena, (m ? m : 1) * sizeof *n->props);
        if (!n->props)
            return nomem(c);
        for (void *it = json_object_iter((json_t *)v); it;
             it = json_object_iter_next((json_t *)v, it), i++) {
            sxv_prop *p = &n->props[i];
            p->name.s = json_object_iter_key(it);
            p->name.n = json_object_iter_key_len(it);
            const json_t *sub = json_object_iter_value(it);
            if (!json_is_object(sub) && !json_is_boolean(sub))
                return sxv_kw_error(c, loc, "properties", SX_EFORMAT,
                                    "property \"%s\" must be a schema",
                                    p->name.s);
            if ((rc = child(c, loc, sub, "properties", p->name.s, p->name.n,
                            -1, &p->node)))
                return rc;
        }
        n->nprops = m;
        qsort(n->props, m, sizeof *n->props, prop_cmp);
    }
    v = json_object_get(s, "patternProperties");
    if (v) {
        if (!json_is_object(v))
            return sxv_kw_error(c, loc, "patternProperties", SX_EFORMAT,
                                "\"patternProperties\" must be an object");
        size_t m = json_object_size(v), i = 0;
        n->pprops = sxv_alloc(&c->v->arena, (m ? m : 1) * sizeof *n->pprops);
        if (!n->pprops)
            return nomem(c);
        for (void *it = json_object_iter((json_t *)v); it;
             it = json_object_iter_next((json_t *)v, it), i++) {
            sxv_pprop *p = &n->pprops[i];
            const char *key = json_object_iter_key(it);
            size_t kl = json_object_iter_key_len(it);
            const json_t *sub = json_object_iter_value(it);
            p->src = key;
            if (!json_is_object(sub) && !json_is_boolean(sub))
                return sxv_kw_error(c, loc, "patternProperties", SX_EFORMAT,
                                    "pattern \"%s\" must map to a schema",
                                    key);
            if ((rc = compile_regex(c, loc, "patternProperties", key, key, kl,
                                    &p->re)) ||
                (rc = child(c, loc, sub, "patternProperties", key, kl, -1,
                            &p->node)))
                return rc;
            n->npprops = i + 1;
        }
    }
    if ((rc = one(c, loc, s, "additionalProperties", &n->addl)))
        return rc;
    if (loc->dialect >= SXV_D6 &&
        (rc = one(c, loc, s, "propertyNames", &n->prop_names)))
        return rc;
    return SX_OK;
}

static int compile_applicators(sxv_comp *c, sxv_node *n, const json_t *s,
                               const sxv_loc *loc)
{
    int rc;
    if ((rc = list(c, loc, s, "allOf", &n->all_of, &n->nall_of)) ||
        (rc = list(c, loc, s, "anyOf", &n->any_of, &n->nany_of)) ||
        (rc = list(c, loc, s, "oneOf", &n->one_of, &n->none_of)) ||
        (rc = one(c, loc, s, "not", &n->not_)))
        return rc;
    if (loc->dialect >= SXV_D7 && (rc = one(c, loc, s, "if", &n->if_)))
        return rc;
    if (n->if_ && ((rc = one(c, loc, s, "then", &n->then_)) ||
                   (rc = one(c, loc, s, "else", &n->else_))))
        return rc;
    if ((rc = compile_properties(c, n, s, loc)) ||
        (rc = compile_deps(c, n, s, loc)) ||
        (rc = compile_items(c, n, s, loc)))
        return rc;
    if (loc->dialect >= SXV_D6 &&
        (rc = one(c, loc, s, "contains", &n->contains)))
        return rc;
    return SX_OK;
}

int sxv_compile_node(sxv_comp *c, sxv_node *n, const json_t *s,
                     const sxv_loc *loc)
{
    int rc, d = loc->dialect;
    unsigned voc = loc->vocab;
    n->ptr = loc->ptr;
    n->res = loc->res;
    n->doc = loc->res->doc;
    n->boolean = -1;
    n->max_len = n->max_items = n->max_props = n->max_contains = SIZE_MAX;
    n->min_contains = 1;

    const json_t *ref = json_object_get(s, "$ref");
    if (ref) {
        if (!json_is_string(ref))
            return sxv_kw_error(c, loc, "$ref", SX_EFORMAT,
                                "\"$ref\" must be a string");
        n->ref_src = json_string_value(ref);
        if ((rc = sxv_add_ref(c, n, loc, n->ref_src, 0)))
            return rc;
        if (d <= SXV_D7)
            return SX_OK; /* draft-07: $ref replaces its siblings */
    }
    if (d >= SXV_D2020) {
        const json_t *dr = json_object_get(s, "$dynamicRef");
        if (dr) {
            if (!json_is_string(dr))
                return sxv_kw_error(c, loc, "$dynamicRef", SX_EFORMAT,
                                    "\"$dynamicRef\" must be a string");
            n->dynref_src = json_string_value(dr);
            if ((rc = sxv_add_ref(c, n, loc, n->dynref_src, 1)))
                return rc;
        }
    } else if (d == SXV_D2019 && json_object_get(s, "$recursiveRef")) {
        return sxv_kw_error(c, loc, "$recursiveRef", SX_EUNSUPPORTED,
                            "\"$recursiveRef\" (draft 2019-09) is not "
                            "supported");
    }
    if ((voc & SXV_V_APPLICATOR) &&
        (rc = compile_applicators(c, n, s, loc)))
        return rc;
    if ((voc & SXV_V_UNEVALUATED) && d >= SXV_D2019) {
        if ((rc = one(c, loc, s, "unevaluatedItems", &n->uneval_items)) ||
            (rc = one(c, loc, s, "unevaluatedProperties", &n->uneval_props)))
            return rc;
        n->need_ann = n->uneval_items || n->uneval_props;
    }
    if (voc & SXV_V_VALIDATION) {
        if ((rc = compile_validation(c, n, s, loc)))
            return rc;
    }
    if (voc & SXV_V_FORMAT) {
        const json_t *f = json_object_get(s, "format");
        if (f) {
            if (!json_is_string(f))
                return sxv_kw_error(c, loc, "format", SX_EFORMAT,
                                    "\"format\" must be a string");
            n->format = sxv_format_id(json_string_value(f));
            n->format_assert = (voc & SXV_V_FORMAT_ASSERT) ||
                               c->opts->format == SX_VAL_FORMAT_ASSERT;
        }
    }
    return SX_OK;
}
