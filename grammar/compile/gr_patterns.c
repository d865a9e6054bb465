/* Several patterns on one string (allOf members with a pattern each).
 *
 * gc_merge keeps the first as `pattern` and lists the others under the
 * internal keyword GC_MORE_PATTERNS; string_node intersects them through
 * the difference it already knows (gc_string_automaton subtracts a set):
 * a string that fails any listed pattern is subtracted.  The validator
 * knows nothing of the internal keyword, so gr_finite.c never hands it a
 * schema that holds one. */
#include <string.h>

#include "grammar/compile/compile.h"
#include "grammar/regex/regex.h"

int gc_more_patterns(gc_ctx *c, json_t *dst, const json_t *p)
{
    json_t *list = json_object_get(dst, GC_MORE_PATTERNS);
    if (!list) {
        list = json_array();
        if (!list || json_object_set_new(dst, GC_MORE_PATTERNS, list))
            return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    }
    if (!json_is_array(list))
        return gc_invalid(c, GC_MORE_PATTERNS, "must be an array");
    json_t *one = json_is_string(p) ? json_pack("[O]", p) : json_incref((json_t *)p);
    if (!one)
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    size_t i, j;
    json_t *x, *y;
    const json_t *first = json_object_get(dst, "pattern");
    json_array_foreach(one, i, x) {
        int have = !json_is_string(x) || json_equal(x, (json_t *)first);
        json_array_foreach(list, j, y)
            have |= json_equal(x, y);
        if (!have && json_array_append(list, x)) {
            json_decref(one);
            return sx_err_set(c->err, SX_ENOMEM, "out of memory");
        }
    }
    json_decref(one);
    return SX_OK;
}

static int keep(gc_ctx *c, int rc, sx_re *re, sx_error *e, const sx_re **out)
{
    if (rc == SX_EUNSUPPORTED)
        return sx_err_setp(c->err, rc, c->ptr, -1, "unsupported: 'pattern' at %s/pattern: %s",
                           c->ptr, e->msg);
    if (rc == SX_ELIMIT)
        return sx_err_setp(c->err, rc, c->ptr, -1, "'pattern' at %s/pattern is too complex: %s",
                           c->ptr, e->msg);
    if (rc)
        return sx_err_setp(c->err, SX_EFORMAT, c->ptr, -1, "invalid schema at %s/pattern: %s",
                           c->ptr, e->msg);
    if (gc_keep_re(c, re)) {
        sx_re_free(re);
        return sx_err_set(c->err, SX_ENOMEM, "out of memory");
    }
    *out = re;
    return SX_OK;
}

int gc_more_patterns_minus(gc_ctx *c, const json_t *s, const sx_re *also_minus,
                           const sx_re **out)
{
    const json_t *list = json_object_get(s, GC_MORE_PATTERNS);
    *out = NULL;
    if (!json_is_array(list) || json_array_size(list) == 0)
        return SX_OK;
    sx_error e;
    sx_err_clear(&e);
    const sx_re *all = NULL, *both = NULL, *part = NULL, *tmp;
    sx_re *re = NULL;
    int rc = sx_re_compile("[\\s\\S]*", 7, SX_RE_FULL, NULL, &re, &e);
    rc = keep(c, rc, re, &e, &all);
    both = all;
    size_t i;
    json_t *p;
    /* both: the strings every listed pattern matches */
    json_array_foreach((json_t *)list, i, p) {
        if (rc)
            break;
        if (!json_is_string(p))
            return gc_invalid(c, "pattern", "must be a string");
        rc = sx_re_compile(json_string_value(p), json_string_length(p), SX_RE_SEARCH, NULL, &re,
                           &e);
        if (!(rc = keep(c, rc, re, &e, &part))) {
            rc = sx_re_intersect(both, part, NULL, &re, &e);
            if (!(rc = keep(c, rc, re, &e, &tmp)))
                both = tmp;
        }
    }
    /* what fails them, or what also_minus takes away */
    if (!rc && also_minus) {
        rc = sx_re_minus(both, also_minus, NULL, &re, &e);
        if (!(rc = keep(c, rc, re, &e, &tmp)))
            both = tmp;
    }
    if (!rc) {
        rc = sx_re_minus(all, both, NULL, &re, &e);
        rc = keep(c, rc, re, &e, out);
    }
    /* a schema that asks for these by the hundred (allOf of anyOfs of
     * patterns multiplied out) would compile for seconds */
    if (!rc && (c->more_pattern_states += sx_re_n_states(*out)) > GC_MAX_PATTERN_STATES)
        rc = sx_err_setp(c->err, SX_ELIMIT, c->ptr, -1,
                         "'pattern' at %s/pattern: the patterns intersected in this schema "
                         "need more than %d automaton states in all",
                         c->ptr, GC_MAX_PATTERN_STATES);
    return rc;
}

static int has_key_prefix(const json_t *v, const char *prefix, size_t n, int depth)
{
    const char *k;
    json_t *x;
    size_t i;
    if (depth > 256)
        return 1;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, x)
            if (!strncmp(k, prefix, n) || has_key_prefix(x, prefix, n, depth + 1))
                return 1;
    } else if (json_is_array(v)) {
        json_array_foreach((json_t *)v, i, x)
            if (has_key_prefix(x, prefix, n, depth + 1))
                return 1;
    }
    return 0;
}

int gc_has_key_prefix(const json_t *v, const char *prefix)
{
    return has_key_prefix(v, prefix, strlen(prefix), 0);
}

int gc_externalise(json_t *v, int depth)
{
    const char *k;
    json_t *x;
    size_t i;
    if (depth > 256)
        return -1;
    if (json_is_array(v)) {
        json_array_foreach(v, i, x)
            if (gc_externalise(x, depth + 1))
                return -1;
        return 0;
    }
    if (!json_is_object(v))
        return 0;
    json_object_foreach(v, k, x)
        if (gc_externalise(x, depth + 1))
            return -1;
    static const char *const internal[] = {GC_MORE_PATTERNS, GC_MORE_CONTAINS};
    for (int w = 0; w < 2; w++) {
        json_t *list = json_object_get(v, internal[w]);
        if (!list)
            continue;
        json_t *all = json_object_get(v, "allOf");
        if (!all) {
            all = json_array();
            if (!all || json_object_set_new(v, "allOf", all))
                return -1;
        }
        if (!json_is_array(list) || !json_is_array(all))
            return -1;
        json_array_foreach(list, i, x) {
            /* patterns are strings; contains constraints are schemas */
            json_t *m = w == 0 ? json_pack("{s:O}", "pattern", x) : json_incref(x);
            if (!m || json_array_append_new(all, m))
                return -1;
        }
        json_object_del(v, internal[w]);
    }
    return 0;
}
