/* Schema dependencies (dependentSchemas, or `dependencies` with schema
 * values) as alternatives: "if key k is present, the object satisfies S_k"
 * for keys k_1..k_n is the union, over every subset P of the keys, of
 * "exactly the keys in P are present, and every S_k of P holds".  Each such
 * branch is a plain schema (required P, the others `false` as properties),
 * which the compiler then merges and compiles exactly.  Non-objects
 * satisfy the branch for the empty P, as they satisfy the dependencies. */
#include <string.h>

#include "grammar/compile/compile.h"

enum { MAX_KEYS = 5 }; /* 2^5 branches at most */

int gc_rewrite_dependencies(gc_ctx *c, const json_t *s, json_t **out)
{
    static const char *const kws[] = {"dependentSchemas", "dependencies"};
    const char *keys[MAX_KEYS];
    const json_t *schemas[MAX_KEYS];
    const char *k;
    json_t *v;
    int n = 0;
    *out = NULL;
    for (int w = 0; w < 2; w++) {
        const json_t *d = json_object_get(s, kws[w]);
        if (!json_is_object(d))
            continue;
        json_object_foreach((json_t *)d, k, v) {
            if (json_is_array(v) || json_is_true(v))
                continue; /* key lists stay; `true` asks nothing */
            if (!json_is_object(v) && !json_is_false(v))
                return gc_invalid(c, kws[w], "must hold schemas or key lists");
            if (n == MAX_KEYS)
                return gc_unsupported(c, kws[w], "more than 5 schema dependencies");
            keys[n] = k;
            schemas[n++] = v;
        }
    }
    if (n == 0)
        return SX_OK;
    /* every branch is one more live alternative for the matcher, and a
     * dependency's own anyOf multiplies them when merged */
    size_t ways = 1;
    for (int i = 0; i < n; i++) {
        const json_t *any = json_is_object(schemas[i]) ? json_object_get(schemas[i], "anyOf") : NULL;
        ways *= 1 + (json_is_array(any) && json_array_size(any) ? json_array_size(any) : 1);
    }
    if (ways > 16)
        return gc_unsupported(c, json_object_get(s, "dependentSchemas") ? "dependentSchemas"
                                                                      : "dependencies",
                              "schema dependencies with more than 16 combinations");
    /* unevaluatedProperties would see what the branches evaluate */
    static const char *const blockers[] = {"unevaluatedProperties", "unevaluatedItems", NULL};
    for (int i = 0; blockers[i]; i++)
        if (json_object_get(s, blockers[i]))
            return gc_unsupported(c, json_object_get(s, "dependentSchemas") ? "dependentSchemas"
                                                                           : "dependencies",
                                  "schema dependencies together with anyOf/oneOf or "
                                  "unevaluated keywords");
    json_t *base = gc_copy(s), *alts = json_array();
    if (!base || !alts)
        goto nomem;
    json_object_del(base, "dependentSchemas");
    json_t *dl = json_object_get(base, "dependencies");
    if (dl) {
        /* the key lists keep their meaning; the schemas move to the branches */
        json_t *lists = json_object();
        if (!lists)
            goto nomem;
        json_object_foreach(dl, k, v)
            if (json_is_array(v))
                json_object_set(lists, k, v);
        if (json_object_size(lists))
            json_object_set_new(base, "dependencies", lists);
        else {
            json_decref(lists);
            json_object_del(base, "dependencies");
        }
    }
    for (unsigned p = 0; p < (1u << n); p++) {
        json_t *req = json_array(), *props = json_object(), *all = json_array();
        json_t *b = json_object();
        if (!req || !props || !all || !b) {
            json_decref(req);
            json_decref(props);
            json_decref(all);
            json_decref(b);
            goto nomem;
        }
        for (int i = 0; i < n; i++) {
            if (p >> i & 1) {
                json_array_append_new(req, json_string(keys[i]));
                json_array_append(all, (json_t *)schemas[i]);
            } else {
                json_object_set_new(props, keys[i], json_false());
            }
        }
        if (json_array_size(req))
            json_object_set_new(b, "required", req);
        else
            json_decref(req);
        if (json_object_size(props))
            json_object_set_new(b, "properties", props);
        else
            json_decref(props);
        json_array_insert_new(all, 0, b);
        if (json_array_append_new(alts, json_pack("{s:o}", "allOf", all)))
            goto nomem;
    }
    if (!json_object_get(base, "anyOf") && !json_object_get(base, "oneOf")) {
        if (json_object_set_new(base, "anyOf", alts))
            goto nomem_base;
    } else {
        /* an own anyOf/oneOf keeps its place: the branches join as one
         * more allOf member (merged as the product of the two) */
        json_t *m = json_pack("{s:o}", "anyOf", alts);
        int added = m ? gc_add_allof(base, m) : -1;
        if (added < 0)
            goto nomem_base;
        if (added > 0) {
            json_decref(base);
            return gc_invalid(c, "allOf", "must be an array");
        }
    }
    *out = base;
    return SX_OK;
nomem:
    json_decref(alts);
nomem_base:
    json_decref(base);
    return sx_err_set(c->err, SX_ENOMEM, "out of memory");
}
