/* Tests of grammar/formats/formats.h against the JSON Schema Test Suite's format
 * instances, exhaustive references for dates, times and IPv4, and PCRE2 as
 * a second opinion on what each regex means. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "grammar/formats/formats.h"
#include "grammar/regex/regex.h"
#include "grammar/validator/validator.h"

static const char *suite_formats[] = {"date", "time",     "date-time", "duration", "email", "hostname",
                                      "ipv4", "ipv6",     "uuid",      "uri",      "uri-reference"};
#define N_SUITE ((int)(sizeof suite_formats / sizeof suite_formats[0]))

static uint64_t rng = 0x243F6A8885A308D3ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static long cp_count(const char *s, size_t n)
{
    long k = 0;
    for (size_t i = 0; i < n; i++)
        k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

/* The format's verdict as strux enforces it: regex plus length bound. */
static int format_accepts(const sx_re *re, const sx_format_info *f, const char *s, size_t n)
{
    return sx_re_matches(re, s, n) && (f->max_len < 0 || cp_count(s, n) <= f->max_len);
}

/* The format's automaton as the grammar uses it: regex AND within (the
 * length bound is applied by format_accepts, as the matcher applies it). */
static sx_re *compile_format(const sx_format_info *f)
{
    sx_re *re = NULL;
    sx_error e;
    int rc = sx_format_automaton(f, NULL, &re, &e);
    if (rc)
        fail_msg("format %s: %s", f->name, e.msg);
    return re;
}

/* The regex alone (what PCRE2 is compared with). */
static sx_re *compile_regex(const sx_format_info *f)
{
    sx_re *re = NULL;
    sx_error e;
    int rc = sx_re_compile(f->regex, strlen(f->regex), SX_RE_FULL, NULL, &re, &e);
    if (rc)
        fail_msg("format %s: %s", f->name, e.msg);
    return re;
}

/* 1 if some dot-separated label of s[0..n) has "--" in positions 3-4. */
static int has_dashdash_label(const char *s, size_t n)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++)
        if (i == n || s[i] == '.') {
            if (i - start >= 4 && s[start + 2] == '-' && s[start + 3] == '-')
                return 1;
            start = i + 1;
        }
    return 0;
}

/* Whether a valid instance the regex rejects falls under the documented
 * strictness of its format. */
static int documented_stricter(const char *fmt, const char *s)
{
    if (!strcmp(fmt, "time") || !strcmp(fmt, "date-time")) {
        const char *p = strstr(s, ":60");
        if (!p)
            return 0;
        const char *z = p + 3;
        while (*z == '.' || (*z >= '0' && *z <= '9'))
            z++;
        int zero_offset = !strcmp(z, "Z") || !strcmp(z, "z") || !strcmp(z, "+00:00") ||
                          !strcmp(z, "-00:00");
        return !(p - s >= 5 && !strncmp(p - 5, "23:59", 5) && zero_offset);
    }
    if (!strcmp(fmt, "hostname")) {
        /* a label with "--" in positions 3-4 */
        const char *l = s;
        for (;;) {
            if (strlen(l) >= 4 && l[2] == '-' && l[3] == '-')
                return 1;
            l = strchr(l, '.');
            if (!l)
                return 0;
            l++;
        }
    }
    if (!strcmp(fmt, "email")) {
        const char *b = strstr(s, "@[");
        if (b && strncmp(b + 2, "IPv6:", 5) && !(b[2] >= '0' && b[2] <= '9'))
            return 1;
        const char *at = strrchr(s, '@');
        return at && at[1] != '[' && has_dashdash_label(at + 1, strlen(at + 1));
    }
    return 0;
}

static void test_suite_instances(void **state)
{
    (void)state;
    const char *shared = getenv("STRUX_SHARED");
    long total_valid = 0, total_invalid = 0, total_stricter = 0, total_looser = 0;
    for (int fi = 0; fi < N_SUITE; fi++) {
        const sx_format_info *f;
        assert_int_equal(sx_format_lookup(suite_formats[fi], &f), SX_OK);
        char path[1024];
        snprintf(path, sizeof path, "%s/json-schema-test-suite/tests/draft2020-12/optional/format/%s.json",
                 shared ? shared : "../shared", f->name);
        json_error_t je;
        json_t *groups = json_load_file(path, JSON_ALLOW_NUL, &je);
        if (!groups)
            fail_msg("cannot load %s: %s", path, je.text);
        sx_re *re = compile_format(f);
        long valid = 0, invalid = 0, stricter = 0, looser = 0;
        size_t gi, ti;
        json_t *g, *t;
        json_array_foreach(groups, gi, g) {
            json_array_foreach(json_object_get(g, "tests"), ti, t) {
                json_t *data = json_object_get(t, "data");
                if (!json_is_string(data))
                    continue; /* formats only constrain strings */
                const char *s = json_string_value(data);
                size_t n = json_string_length(data);
                int want = json_is_true(json_object_get(t, "valid"));
                int got = format_accepts(re, f, s, n);
                want ? valid++ : invalid++;
                if (got == want)
                    continue;
                if (got) {
                    looser++;
                    print_message("  LOOSER  %s accepts invalid \"%s\" (%s)\n", f->name, s,
                                  json_string_value(json_object_get(t, "description")));
                } else {
                    stricter++;
                    int doc = documented_stricter(f->name, s);
                    print_message("  stricter %s rejects valid \"%s\" (%s)%s\n", f->name, s,
                                  json_string_value(json_object_get(t, "description")),
                                  doc ? " [documented]" : " [NOT DOCUMENTED]");
                    if (!doc)
                        fail_msg("undocumented strictness in %s on \"%s\"", f->name, s);
                    assert_non_null(f->stricter);
                }
            }
        }
        print_message("  %-13s %3ld valid, %3ld invalid, %ld stricter, %ld looser, %d states\n", f->name,
                      valid, invalid, stricter, looser, sx_re_n_states(re));
        total_valid += valid, total_invalid += invalid, total_stricter += stricter, total_looser += looser;
        assert_true(valid > 0 && invalid > 0);
        sx_re_free(re);
        json_decref(groups);
    }
    print_message("  all: %ld valid, %ld invalid, %ld stricter (documented), %ld looser\n", total_valid,
                  total_invalid, total_stricter, total_looser);
    assert_int_equal(total_looser, 0);
}

static int leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static void date_exhaustive(void **state)
{
    (void)state;
    const sx_format_info *f;
    assert_int_equal(sx_format_lookup("date", &f), SX_OK);
    sx_re *re = compile_format(f);
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    long accepted = 0;
    for (int y = 0; y <= 9999; y++)
        for (int m = 0; m <= 13; m++)
            for (int d = 0; d <= 32; d++) {
                char s[16];
                snprintf(s, sizeof s, "%04d-%02d-%02d", y, m, d);
                /* year 0000 is refused by grammar and validator alike */
                int ok = y >= 1 && m >= 1 && m <= 12 && d >= 1 &&
                         d <= mdays[m - 1] + (m == 2 && leap(y));
                int vok = -1;
                if (sx_re_matches(re, s, 10) != ok)
                    fail_msg("date %s: expected %d", s, ok);
                if (sx_val_format_check("date", s, 10, &vok) || vok != ok)
                    fail_msg("date %s: the validator says %d, expected %d", s, vok, ok);
                accepted += ok;
            }
    /* days in the Gregorian years 1..9999: 10,000 years less year 0 (leap) */
    assert_int_equal(accepted, 3652425 - 366);
    sx_re_free(re);
}

static void time_exhaustive(void **state)
{
    (void)state;
    const sx_format_info *f;
    assert_int_equal(sx_format_lookup("time", &f), SX_OK);
    sx_re *re = compile_format(f);
    static const char *offs[] = {"Z", "z", "+00:00", "-00:00", "+01:30", "-08:00", "+23:59",
                                 "+24:00", "-00:60", "+1:00", "", "Z+00:00"};
    static const char *fracs[] = {"", ".5", ".123456789", ".", ".x"};
    long stricter = 0;
    for (int hh = 0; hh <= 25; hh++)
        for (int mm = 0; mm <= 61; mm++)
            for (int ss = 0; ss <= 61; ss++)
                for (size_t o = 0; o < sizeof offs / sizeof offs[0]; o++)
                    for (size_t fr = 0; fr < sizeof fracs / sizeof fracs[0]; fr++) {
                        char s[64];
                        snprintf(s, sizeof s, "%02d:%02d:%02d%s%s", hh, mm, ss, fracs[fr], offs[o]);
                        int oh = 0, om = 0, sign = 0, off_ok;
                        if (!strcmp(offs[o], "Z") || !strcmp(offs[o], "z")) {
                            off_ok = 1;
                        } else if (strlen(offs[o]) == 6 && sscanf(offs[o] + 1, "%2d:%2d", &oh, &om) == 2) {
                            sign = offs[o][0] == '+' ? 1 : -1;
                            off_ok = oh <= 23 && om <= 59;
                        } else {
                            off_ok = 0;
                        }
                        int frac_ok = fr <= 2;
                        int base = hh <= 23 && mm <= 59 && frac_ok && off_ok;
                        /* RFC 3339: second 60 only when the UTC time is 23:59 */
                        int utc_min = ((hh * 60 + mm - sign * (oh * 60 + om)) % 1440 + 1440) % 1440;
                        int ok = base && (ss <= 59 || (ss == 60 && utc_min == 23 * 60 + 59));
                        int got = sx_re_matches(re, s, strlen(s));
                        if (got && !ok)
                            fail_msg("time accepts invalid %s", s);
                        if (!got && ok) {
                            /* only the documented leap-second approximation */
                            assert_int_equal(ss, 60);
                            assert_true(oh != 0 || om != 0);
                            stricter++;
                        }
                    }
    print_message("  time: %ld valid leap-second strings with a non-zero offset rejected (documented)\n",
                  stricter);
    sx_re_free(re);
}

static void ipv4_octets(void **state)
{
    (void)state;
    const sx_format_info *f;
    assert_int_equal(sx_format_lookup("ipv4", &f), SX_OK);
    sx_re *re = compile_format(f);
    /* every spelling of one octet, in each position */
    for (int pos = 0; pos < 4; pos++)
        for (int v = -1; v < 1300; v++) {
            char oct[8];
            if (v < 1000)
                snprintf(oct, sizeof oct, "%d", v < 0 ? 0 : v);
            else
                snprintf(oct, sizeof oct, "0%d", v - 1000); /* leading zero */
            if (v < 0)
                oct[0] = 0; /* empty */
            char s[64];
            const char *parts[4] = {"1", "22", "255", "0"};
            parts[pos] = oct;
            snprintf(s, sizeof s, "%s.%s.%s.%s", parts[0], parts[1], parts[2], parts[3]);
            int ok = v >= 0 && v <= 255;
            assert_int_equal(sx_re_matches(re, s, strlen(s)), ok);
        }
    sx_re_free(re);
}

static void lookup_and_compile(void **state)
{
    (void)state;
    const char *src;
    assert_int_equal(sx_format_regex("nope", &src), SX_ENOTFOUND);
    assert_int_equal(sx_format_regex(NULL, &src), SX_ENOTFOUND);
    assert_int_equal(sx_format_regex("uuid", &src), SX_OK);
    assert_non_null(strstr(src, "[0-9A-Fa-f]{8}"));
    int n = 0;
    while (sx_format_at(n))
        n++;
    assert_int_equal(n, N_SUITE);
    sx_re *re;
    sx_error e;
    assert_int_equal(sx_format_compile("nope", NULL, &re, &e), SX_ENOTFOUND);
    assert_null(re);
    assert_int_equal(sx_format_compile("ipv6", NULL, &re, &e), SX_OK);
    assert_true(sx_re_matches(re, "::1", 3));
    sx_re_free(re);
    /* hostname's exact automaton is large: refused with the default
     * budget, built with a bigger one, and equal to regex + length bound */
    sx_re_limits lim;
    sx_re_limits_default(&lim);
    lim.max_states = 200000;
    lim.max_work = 400000000;
    int rc = sx_format_compile("hostname", &lim, &re, &e);
    assert_int_equal(rc, SX_OK);
    print_message("  exact hostname automaton: %d states\n", sx_re_n_states(re));
    char host[300];
    for (int len = 250; len <= 256; len++) {
        /* labels of 63 joined by dots, cut to len and fixed not to end in '.' or '-' */
        for (int i = 0; i < len; i++)
            host[i] = (i % 64 == 63) ? '.' : 'a';
        if (host[len - 1] == '.')
            host[len - 1] = 'b';
        assert_int_equal(sx_re_matches(re, host, (size_t)len), len <= 253);
    }
    sx_re_free(re);
}

/* PCRE2 agrees with the compiled format on samples drawn from the DFA, their
 * mutations and random ASCII. */
static void formats_agree_with_pcre2(void **state)
{
    (void)state;
    long samples = 0;
    for (int fi = 0; fi < N_SUITE; fi++) {
        const sx_format_info *f = sx_format_at(fi);
        sx_re *re = compile_regex(f);
        int ec;
        PCRE2_SIZE eo;
        pcre2_code *code = pcre2_compile((PCRE2_SPTR)f->regex, PCRE2_ZERO_TERMINATED,
                                         PCRE2_UTF | PCRE2_ANCHORED | PCRE2_ENDANCHORED, &ec, &eo, NULL);
        assert_non_null(code);
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
        sx_re_table t;
        sx_re_get_table(re, &t);
        for (int k = 0; k < 3000; k++) {
            char s[400];
            size_t n = 0;
            if (k % 3 != 2) {
                int32_t st = t.start;
                size_t want = rnd() % 40;
                for (;;) {
                    if (t.accept[st] && (n >= want || rnd() % 6 == 0))
                        break;
                    int bytes[256], nb = 0, best = INT32_MAX;
                    for (int b = 0; b < 256; b++) {
                        int32_t to = sx_re_table_step(&t, st, (uint8_t)b);
                        if (to < 0)
                            continue;
                        int mb = sx_re_min_bytes(re, to);
                        if (n > want + 20) {
                            if (mb > best)
                                continue;
                            if (mb < best)
                                nb = 0, best = mb;
                        }
                        bytes[nb++] = b;
                    }
                    if (nb == 0)
                        break;
                    int b = bytes[rnd() % (uint32_t)nb];
                    s[n++] = (char)b;
                    st = sx_re_table_step(&t, st, (uint8_t)b);
                    if (n > 380)
                        break;
                }
                if (k % 3 == 1 && n > 0) /* one ASCII mutation */
                    s[rnd() % n] = (char)(0x20 + rnd() % 95);
            } else {
                n = rnd() % 24;
                for (size_t i = 0; i < n; i++)
                    s[i] = "0123456789abcdefABCDEF:.-@[]/?#%TZ+PWYMDHS\"\\ x"[rnd() % 47];
            }
            int want = pcre2_match(code, (PCRE2_SPTR)s, n, 0, 0, md, NULL) >= 0;
            int got = sx_re_matches(re, s, n);
            if (want != got)
                fail_msg("format %s on \"%.*s\": dfa %d, pcre2 %d", f->name, (int)n, s, got, want);
            samples++;
        }
        pcre2_match_data_free(md);
        pcre2_code_free(code);
        sx_re_free(re);
    }
    print_message("  %ld samples agree with PCRE2\n", samples);
}

/* A random string of the automaton's language: a walk that stops at an
 * accepting state once it is `want` bytes long (or by chance), steering to
 * the nearest accepting state past want + 20. */
static size_t sample_dfa(const sx_re *re, const sx_re_table *t, size_t want, char *s, size_t cap)
{
    size_t n = 0;
    int32_t st = t->start;
    for (;;) {
        if (t->accept[st] && (n >= want || rnd() % 8 == 0))
            break;
        int bytes[256], nb = 0, best = INT32_MAX;
        for (int b = 0; b < 256; b++) {
            int32_t to = sx_re_table_step(t, st, (uint8_t)b);
            if (to < 0)
                continue;
            int mb = sx_re_min_bytes(re, to);
            if (n > want + 20) {
                if (mb > best)
                    continue;
                if (mb < best)
                    nb = 0, best = mb;
            }
            bytes[nb++] = b;
        }
        if (nb == 0 || n + 1 >= cap)
            break;
        int b = bytes[rnd() % (uint32_t)nb];
        s[n++] = (char)b;
        st = sx_re_table_step(t, st, (uint8_t)b);
    }
    s[n] = 0;
    return n;
}

typedef struct agree_stats {
    long checked, valid, stricter;
} agree_stats;

/* The grammar's verdict (automaton and length bound) against the
 * validator's: never looser, and stricter only where documented. */
static void agree_one(const sx_format_info *f, const sx_re *re, const char *s, size_t n,
                      agree_stats *st)
{
    int g = format_accepts(re, f, s, n), v = -1;
    if (sx_val_format_check(f->name, s, n, &v))
        fail_msg("validator has no format %s", f->name);
    st->checked++;
    st->valid += v;
    if (g && !v)
        fail_msg("format %s: the grammar accepts \"%.*s\" (%zu bytes), the validator refuses it",
                 f->name, (int)n, s, n);
    if (v && !g) {
        char z[512];
        snprintf(z, sizeof z, "%.*s", (int)n, s);
        if (!documented_stricter(f->name, z) || !f->stricter)
            fail_msg("format %s: the validator accepts \"%s\", the grammar refuses it "
                     "(not a documented strictness)", f->name, z);
        st->stricter++;
    }
}

/* Every format's automaton defines the validator's set: exhaustively on
 * short strings over the characters that matter to it, and on samples of
 * the automaton up to past its length bounds, with their mutations. */
static void formats_agree_with_validator(void **state)
{
    (void)state;
    static const struct {
        const char *name, *alphabet;
    } alpha[] = {
        {"date", "0129-"},        {"time", "0125:.Z+-"},    {"date-time", "019-:TZ"},
        {"duration", "PT1YMDW"},  {"email", "a0-.@\"[]\\"}, {"hostname", "a0-.x"},
        {"ipv4", "0125."},        {"ipv6", "0af:.1"},      {"uuid", "0aF-"},
        {"uri", "a:/?#%@[].0"},   {"uri-reference", "a:/?#%@.0"},
    };
    long total = 0;
    for (int fi = 0; fi < N_SUITE; fi++) {
        const sx_format_info *f = sx_format_at(fi);
        const char *A = NULL;
        for (size_t k = 0; k < sizeof alpha / sizeof alpha[0]; k++)
            if (!strcmp(alpha[k].name, f->name))
                A = alpha[k].alphabet;
        assert_non_null(A);
        sx_re *re = compile_format(f);
        sx_re_table t;
        sx_re_get_table(re, &t);
        agree_stats st = {0};
        /* exhaustive: every string of up to 5 characters over A */
        size_t na = strlen(A);
        char s[512];
        for (size_t len = 0; len <= 5; len++) {
            size_t idx[5] = {0};
            for (;;) {
                for (size_t i = 0; i < len; i++)
                    s[i] = A[idx[i]];
                agree_one(f, re, s, len, &st);
                size_t i = 0;
                while (i < len && ++idx[i] == na)
                    idx[i++] = 0;
                if (i == len)
                    break;
            }
        }
        /* samples, short and long (past 64 and 253/254), and mutations */
        for (int k = 0; k < 4000; k++) {
            size_t want = k % 4 == 3 ? 40 + rnd() % 240 : rnd() % 40;
            size_t n = sample_dfa(re, &t, want, s, 300);
            agree_one(f, re, s, n, &st);
            for (int m = 0; m < 3 && n > 0; m++) {
                char z[512];
                memcpy(z, s, n);
                size_t zn = n, at = rnd() % n;
                char c = rnd() % 2 ? A[rnd() % na] : (char)(0x20 + rnd() % 95);
                switch (rnd() % 3) {
                case 0: z[at] = c; break;
                case 1: memmove(z + at + 1, z + at, zn - at); z[at] = c; zn++; break;
                default: memmove(z + at, z + at + 1, zn - at - 1); zn--; break;
                }
                agree_one(f, re, z, zn, &st);
            }
        }
        print_message("  %-13s %7ld strings, %6ld valid, %ld valid ones refused (documented)\n",
                      f->name, st.checked, st.valid, st.stricter);
        assert_true(st.valid > 100);
        total += st.checked;
        sx_re_free(re);
    }
    print_message("  %ld strings: the automata never accept what the validator refuses\n", total);
}

/* A format's shape (email: LOCAL_PART "@" [^@]*) and its within written
 * over ASCII only change how the automaton is built, never what it is: the
 * same table as the format regex intersected with RFC 5321's limit as
 * stated, "at most 64 octets before the last '@'", directly. */
static void shaped_within_is_exact(void **state)
{
    (void)state;
    const sx_format_info *f;
    sx_re *fast = NULL, *re = NULL, *lim = NULL, *direct = NULL;
    sx_error e;
    assert_int_equal(sx_format_lookup("email", &f), SX_OK);
    assert_non_null(f->shape);
    assert_int_equal(sx_format_automaton(f, NULL, &fast, &e), SX_OK);
    const char *rfc = "[^]{1,64}@[^@]+";
    assert_int_equal(sx_re_compile(f->regex, strlen(f->regex), SX_RE_FULL, NULL, &re, &e), SX_OK);
    assert_int_equal(sx_re_compile(rfc, strlen(rfc), SX_RE_FULL, NULL, &lim, &e), SX_OK);
    assert_int_equal(sx_re_intersect(re, lim, NULL, &direct, &e), SX_OK);
    sx_re_table a, b;
    sx_re_get_table(fast, &a);
    sx_re_get_table(direct, &b);
    assert_int_equal(a.n_states, b.n_states);
    assert_int_equal(a.n_classes, b.n_classes);
    assert_int_equal(a.start, b.start);
    assert_memory_equal(a.byte_class, b.byte_class, 256);
    assert_memory_equal(a.next, b.next, (size_t)a.n_states * (size_t)a.n_classes * sizeof *a.next);
    assert_memory_equal(a.accept, b.accept, (size_t)a.n_states);
    /* and the limit bites where it should */
    char local[80];
    memset(local, 'a', 64);
    strcpy(local + 64, "@example.com");
    assert_true(sx_re_matches(fast, local, strlen(local)));
    memset(local, 'a', 65);
    strcpy(local + 65, "@example.com");
    assert_false(sx_re_matches(fast, local, strlen(local)));
    const char *quoted = "\"a@b\"@example.com";
    assert_true(sx_re_matches(fast, quoted, strlen(quoted)));
    sx_re_free(fast);
    sx_re_free(re);
    sx_re_free(lim);
    sx_re_free(direct);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_suite_instances),
        cmocka_unit_test(date_exhaustive),
        cmocka_unit_test(time_exhaustive),
        cmocka_unit_test(ipv4_octets),
        cmocka_unit_test(lookup_and_compile),
        cmocka_unit_test(shaped_within_is_exact),
        cmocka_unit_test(formats_agree_with_pcre2),
        cmocka_unit_test(formats_agree_with_validator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
