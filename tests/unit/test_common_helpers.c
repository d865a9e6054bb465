/* The helpers in common/ that several parts share: bf16 conversions
 * (common/sx_bf16.h: the CPU engine, the model loader and the CUDA kernels
 * all round through it) and UTF-8 (common/sx_utf8.h: regex, tokenizer,
 * generation, numbers).  Each is held to a reference written here from the
 * definitions, exhaustively where the space allows (every bf16 pattern,
 * every scalar value, every two- and three-byte sequence).  ~0.3 s. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/sx_bf16.h"
#include "common/sx_utf8.h"

static float f_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t u_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static int is_nan_bits(uint32_t u)
{
    return (u & 0x7fffffffu) > 0x7f800000u;
}

/* The bf16 nearest to the f32 with bits u, ties to even, from the
 * definition: the two bf16 values around it and their distances in double
 * (exact: both are f32 values).  u is not a NaN. */
static uint16_t ref_round(uint32_t u)
{
    if (u == 0x7f800000u)
        return 0x7f80; /* infinity is its own neighbour */
    uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u; /* hi: one bf16 ulp further from 0 */
    double x = fabs((double)f_of(u));
    double dlo = x - fabs((double)f_of(lo));
    /* past the largest finite bf16 the next one up is infinity: measure the
     * step as if the exponent went on (2^128), as IEEE rounding does */
    double dhi = ((hi & 0x7f800000u) == 0x7f800000u ? ldexp(1.0, 128) : fabs((double)f_of(hi))) - x;
    if (dlo < dhi || (dlo == dhi && !((lo >> 16) & 1)))
        return (uint16_t)(lo >> 16);
    return (uint16_t)(hi >> 16);
}

static void bf16_every_pattern_round_trips(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = sx_bf16_to_f32((uint16_t)h);
        assert_int_equal(u_of(f), h << 16); /* exact: the top half */
        uint16_t back = sx_f32_to_bf16(f);
        if (is_nan_bits(h << 16)) {
            /* a NaN stays a NaN, same sign and payload, quiet */
            assert_int_equal(back, h | 0x40);
            assert_true(isnan(sx_bf16_to_f32(back)));
        } else {
            assert_int_equal(back, h);
        }
    }
}

static void bf16_rounds_to_nearest_even(void **state)
{
    (void)state;
    /* every top half with the low halves around the rounding points */
    static const uint32_t lows[] = {0x0000, 0x0001, 0x3fff, 0x7ffe, 0x7fff, 0x8000,
                                    0x8001, 0xbfff, 0xfffe, 0xffff};
    long checked = 0;
    for (uint32_t top = 0; top < 65536; top++)
        for (size_t k = 0; k < sizeof lows / sizeof *lows; k++) {
            uint32_t u = top << 16 | lows[k];
            if (is_nan_bits(u))
                continue;
            uint16_t want = ref_round(u & 0x7fffffffu) | (uint16_t)((u >> 16) & 0x8000u);
            assert_int_equal(sx_f32_to_bf16(f_of(u)), want);
            checked++;
        }
    assert_true(checked > 600000);
    /* named cases: ties go to even, both ways, both signs */
    assert_int_equal(sx_f32_to_bf16(1.0f + 1.0f / 256), 0x3f80);  /* tie, 1 is even */
    assert_int_equal(sx_f32_to_bf16(1.0f + 3.0f / 256), 0x3f82);  /* tie, up to even */
    assert_int_equal(sx_f32_to_bf16(-1.0f - 1.0f / 256), 0xbf80);
    assert_int_equal(sx_f32_to_bf16(-1.0f - 3.0f / 256), 0xbf82);
    assert_int_equal(sx_f32_to_bf16(f_of(0x3f808001u)), 0x3f81);  /* just past a tie */
    assert_int_equal(sx_f32_to_bf16(f_of(0x3f807fffu)), 0x3f80);  /* just short of one */
    /* zeros, infinities, overflow, subnormals */
    assert_int_equal(sx_f32_to_bf16(0.0f), 0x0000);
    assert_int_equal(sx_f32_to_bf16(-0.0f), 0x8000);
    assert_int_equal(sx_f32_to_bf16(INFINITY), 0x7f80);
    assert_int_equal(sx_f32_to_bf16(-INFINITY), 0xff80);
    assert_int_equal(sx_f32_to_bf16(f_of(0x7f7f7fffu)), 0x7f7f);  /* stays the largest */
    assert_int_equal(sx_f32_to_bf16(f_of(0x7f7f8000u)), 0x7f80);  /* tie at the top: to inf */
    assert_int_equal(sx_f32_to_bf16(3.4e38f), 0x7f80);
    assert_int_equal(sx_f32_to_bf16(f_of(0x00008000u)), 0x0000);  /* subnormal tie to even 0 */
    assert_int_equal(sx_f32_to_bf16(f_of(0x00018000u)), 0x0002);  /* subnormal tie up to even */
    /* NaNs: one whose payload is only in the low half must not become inf */
    assert_int_equal(sx_f32_to_bf16(f_of(0x7f800001u)), 0x7fc0);
    assert_int_equal(sx_f32_to_bf16(f_of(0xff800001u)), 0xffc0);
    assert_int_equal(sx_f32_to_bf16(f_of(0x7fc00000u)), 0x7fc0);
    assert_int_equal(sx_f32_to_bf16(f_of(0x7fa12345u)), 0x7fe1);
}

/* ---- UTF-8 ----------------------------------------------------------------- */

static void utf8_every_scalar_value_round_trips(void **state)
{
    (void)state;
    uint8_t b[4];
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        size_t n = sx_utf8_encode(cp, b);
        if (cp >= 0xD800 && cp <= 0xDFFF) {
            assert_int_equal(n, 0);
            continue;
        }
        assert_int_equal(n, cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4);
        assert_int_equal(sx_utf8_lead_len(b[0]), (int)n);
        for (size_t k = 1; k < n; k++)
            assert_int_equal(b[k] & 0xC0, 0x80);
        uint32_t got = 0xFFFFFFFFu;
        assert_int_equal(sx_utf8_decode(b, n, &got), n);
        assert_int_equal(got, cp);
        /* one byte short is a truncation, never a shorter character */
        if (n > 1)
            assert_int_equal(sx_utf8_decode(b, n - 1, &got), 0);
    }
    assert_int_equal(sx_utf8_encode(0x110000, b), 0);
    assert_int_equal(sx_utf8_encode(0xFFFFFFFFu, b), 0);
}

static void utf8_lead_lengths(void **state)
{
    (void)state;
    for (int c = 0; c < 256; c++) {
        int want = c < 0x80 ? 1 : c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
        assert_int_equal(sx_utf8_lead_len((uint8_t)c), want);
    }
}

/* Every two- and three-byte sequence against the definition: continuation
 * bytes, then the value in range for its length and not a surrogate. */
static void utf8_decode_matches_the_definition(void **state)
{
    (void)state;
    uint8_t b[3];
    uint32_t cp;
    for (uint32_t x = 0; x < 0x10000; x++) {
        b[0] = (uint8_t)(x >> 8), b[1] = (uint8_t)x;
        int ok = b[0] >= 0xC0 && b[0] < 0xE0 && (b[1] & 0xC0) == 0x80 &&
                 (((b[0] & 0x1Fu) << 6) | (b[1] & 0x3Fu)) >= 0x80;
        size_t n = sx_utf8_decode(b, 2, &cp);
        if (b[0] < 0x80)
            assert_int_equal(n, 1);
        else
            assert_int_equal(n, ok ? 2 : 0);
    }
    for (uint32_t x = 0; x < 0x100000; x++) {
        b[0] = (uint8_t)(0xE0 | x >> 16), b[1] = (uint8_t)(x >> 8), b[2] = (uint8_t)x;
        uint32_t v = ((b[0] & 0x0Fu) << 12) | ((b[1] & 0x3Fu) << 6) | (b[2] & 0x3Fu);
        int ok = (b[1] & 0xC0) == 0x80 && (b[2] & 0xC0) == 0x80 && v >= 0x800 &&
                 !(v >= 0xD800 && v <= 0xDFFF);
        size_t n = sx_utf8_decode(b, 3, &cp);
        assert_int_equal(n, ok ? 3 : 0);
        if (ok)
            assert_int_equal(cp, v);
    }
}

static void utf8_refuses_overlongs_surrogates_and_past_the_end(void **state)
{
    (void)state;
    static const struct { const char *s; size_t n; } bad[] = {
        {"\xC0\x80", 2}, {"\xC1\xBF", 2},                       /* overlong 2-byte */
        {"\xE0\x80\x80", 3}, {"\xE0\x9F\xBF", 3},               /* overlong 3-byte */
        {"\xF0\x80\x80\x80", 4}, {"\xF0\x8F\xBF\xBF", 4},       /* overlong 4-byte */
        {"\xED\xA0\x80", 3}, {"\xED\xBF\xBF", 3},               /* surrogates */
        {"\xF4\x90\x80\x80", 4}, {"\xF5\x80\x80\x80", 4},       /* past U+10FFFF */
        {"\xF7\xBF\xBF\xBF", 4}, {"\xFF", 1}, {"\xFE", 1},
        {"\x80", 1}, {"\xBF", 1},                               /* stray continuation */
        {"\xE2\x82", 2}, {"\xF0\x9F\x98", 3}, {"\xC3", 1},      /* truncated */
        {"\xE2\x41\xAC", 3}, {"\xF0\x9F\x41\x80", 4},           /* ASCII inside */
        {"", 0},
    };
    uint32_t cp = 12345;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(sx_utf8_decode((const uint8_t *)bad[i].s, bad[i].n, &cp), 0);
        assert_int_equal(cp, 12345); /* untouched */
    }
    static const struct { const char *s; size_t n; uint32_t cp; } good[] = {
        {"\x7F", 1, 0x7F}, {"\xC2\x80", 2, 0x80}, {"\xDF\xBF", 2, 0x7FF},
        {"\xE0\xA0\x80", 3, 0x800}, {"\xED\x9F\xBF", 3, 0xD7FF}, {"\xEE\x80\x80", 3, 0xE000},
        {"\xEF\xBF\xBF", 3, 0xFFFF}, {"\xF0\x90\x80\x80", 4, 0x10000},
        {"\xF4\x8F\xBF\xBF", 4, 0x10FFFF}, {"\xE2\x82\xAC", 3, 0x20AC},
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        assert_int_equal(sx_utf8_decode((const uint8_t *)good[i].s, good[i].n + 1, &cp),
                         good[i].n); /* the NUL after it is not read into it */
        assert_int_equal(cp, good[i].cp);
    }
}

static void utf8_check_and_maximal_subparts(void **state)
{
    (void)state;
    int ascii = -1;
    assert_int_equal(sx_utf8_check("plain ascii text, long enough", 29, &ascii), 29);
    assert_int_equal(ascii, 1);
    assert_int_equal(sx_utf8_check("caf\xC3\xA9 ok", 8, &ascii), 8);
    assert_int_equal(ascii, 0);
    assert_int_equal(sx_utf8_check("ab\xC3\xA9\xED\xA0\x80z", 8, &ascii), 4);
    assert_int_equal(ascii, 0);
    assert_int_equal(sx_utf8_check("0123456789\xE2\x82", 12, NULL), 10); /* cut at the end */
    assert_int_equal(sx_utf8_check("", 0, &ascii), 0);
    assert_int_equal(ascii, 1);
    size_t seq;
    /* the unit of U+FFFD replacement: as far as a valid sequence could go */
    assert_int_equal(sx_utf8_bad_len((const unsigned char *)"\xF0\x90\x80", 3, &seq), 3);
    assert_int_equal(seq, 0); /* only the end cut it short */
    assert_int_equal(sx_utf8_bad_len((const unsigned char *)"\xF0\x90\x41", 3, &seq), 2);
    assert_int_equal(seq, 1);
    assert_int_equal(sx_utf8_bad_len((const unsigned char *)"\xE0\x80\x80", 3, &seq), 1);
    assert_int_equal(sx_utf8_bad_len((const unsigned char *)"\xED\xA0\x80", 3, &seq), 1);
    assert_int_equal(sx_utf8_bad_len((const unsigned char *)"\xC0\xAF", 2, &seq), 1);
    assert_int_equal(sx_utf8_bad_len((const unsigned char *)"\xE2\x82\xAC", 3, &seq), 0);
    assert_int_equal(seq, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bf16_every_pattern_round_trips),
        cmocka_unit_test(bf16_rounds_to_nearest_even),
        cmocka_unit_test(utf8_every_scalar_value_round_trips),
        cmocka_unit_test(utf8_lead_lengths),
        cmocka_unit_test(utf8_decode_matches_the_definition),
        cmocka_unit_test(utf8_refuses_overlongs_surrogates_and_past_the_end),
        cmocka_unit_test(utf8_check_and_maximal_subparts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
