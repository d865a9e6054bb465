/* val_kw_scalar: keywords of numbers (bounds, multipleOf) and strings
 * (lengths in code points, pattern, format). */
#include "grammar/validator/val_internal.h"

static int numbers(sxv_ctx *c, const sxv_node *n, const json_t *x)
{
    char a[40], b[40];
    if (n->minimum) {
        int k = sxv_num_cmp(c->nums, x, n->minimum);
        if (k < 0 || (k == 0 && n->xmin_bool)) {
            sxv_num_str(c->nums, x, a, sizeof a);
            sxv_num_str(c->nums, n->minimum, b, sizeof b);
            return sxv_fail(c, n, n->xmin_bool ? "exclusiveMinimum" : "minimum",
                            n->xmin_bool ? "%s is not greater than %s"
                                         : "%s is less than the minimum %s",
                            a, b);
        }
    }
    if (n->maximum) {
        int k = sxv_num_cmp(c->nums, x, n->maximum);
        if (k > 0 || (k == 0 && n->xmax_bool)) {
            sxv_num_str(c->nums, x, a, sizeof a);
            sxv_num_str(c->nums, n->maximum, b, sizeof b);
            return sxv_fail(c, n, n->xmax_bool ? "exclusiveMaximum" : "maximum",
                            n->xmax_bool ? "%s is not less than %s"
                                         : "%s is greater than the maximum %s",
                            a, b);
        }
    }
    if (n->xminimum && sxv_num_cmp(c->nums, x, n->xminimum) <= 0) {
        sxv_num_str(c->nums, x, a, sizeof a);
        sxv_num_str(c->nums, n->xminimum, b, sizeof b);
        return sxv_fail(c, n, "exclusiveMinimum", "%s is not greater than %s",
                        a, b);
    }
    if (n->xmaximum && sxv_num_cmp(c->nums, x, n->xmaximum) >= 0) {
        sxv_num_str(c->nums, x, a, sizeof a);
        sxv_num_str(c->nums, n->xmaximum, b, sizeof b);
        return sxv_fail(c, n, "exclusiveMaximum", "%s is not less than %s", a,
                        b);
    }
    if (n->multiple_of && !sxv_num_multiple_of(c->nums, x, n->multiple_of)) {
        sxv_num_str(c->nums, x, a, sizeof a);
        sxv_num_str(c->nums, n->multiple_of, b, sizeof b);
        return sxv_fail(c, n, "multipleOf", "%s is not a multiple of %s", a, b);
    }
    return SXV_VALID;
}

static int strings(sxv_ctx *c, const sxv_node *n, const json_t *x)
{
    const char *s = json_string_value(x);
    size_t len = json_string_length(x);
    if (n->min_len || n->max_len != (size_t)-1) {
        size_t cps = sxv_utf8_count(s, len);
        if (cps < n->min_len)
            return sxv_fail(c, n, "minLength",
                            "string of length %zu is shorter than %zu",
                            cps, n->min_len);
        if (cps > n->max_len)
            return sxv_fail(c, n, "maxLength",
                            "string of length %zu is longer than %zu", cps,
                            n->max_len);
    }
    if (n->pattern) {
        int m = sxv_match(c, n->pattern, s, len);
        if (m < 0)
            return sxv_hard(c, -m, "pattern /%.80s/ could not be matched: %s",
                            n->pattern_src, sx_strerror(-m));
        if (!m)
            return sxv_fail(c, n, "pattern", "string does not match /%.120s/",
                            n->pattern_src);
    }
    if (n->format && n->format_assert && !sxv_format_check(n->format, s, len))
        return sxv_fail(c, n, "format", "string is not a valid %s",
                        sxv_format_name(n->format));
    return SXV_VALID;
}

int sxv_kw_scalar(sxv_ctx *c, const sxv_node *n, const json_t *x)
{
    return json_is_string(x) ? strings(c, n, x) : numbers(c, n, x);
}
