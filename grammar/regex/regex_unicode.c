/* \p{..} sets from utf8proc's General_Category data.
 *
 * The category of every code point is folded once per process into runs of
 * equal category (about 4,000); each property is then a union of runs.  The
 * run table is immutable after pthread_once, so concurrent compiles share it
 * safely. */
#include <pthread.h>
#include <string.h>
#include <utf8proc.h>

#include "grammar/regex/regex_internal.h"

#define MAX_RUNS 16384

static uint32_t run_start[MAX_RUNS + 1];
static uint8_t  run_cat[MAX_RUNS];
static int32_t  n_runs;
static pthread_once_t runs_once = PTHREAD_ONCE_INIT;

static void build_runs(void)
{
    int prev = -1;
    int32_t n = 0;
    for (uint32_t cp = 0; cp <= SX_RX_MAX_CP; cp++) {
        int c = (int)utf8proc_category((utf8proc_int32_t)cp);
        if (c != prev) {
            if (n == MAX_RUNS) {
                n_runs = -1; /* table outgrew the buffer: refuse \p below */
                return;
            }
            run_start[n] = cp;
            run_cat[n] = (uint8_t)c;
            n++;
            prev = c;
        }
    }
    run_start[n] = SX_RX_MAX_CP + 1;
    n_runs = n;
}

#define C(x) (1u << UTF8PROC_CATEGORY_##x)
#define L_ (C(LU) | C(LL) | C(LT) | C(LM) | C(LO))
#define M_ (C(MN) | C(MC) | C(ME))
#define N_ (C(ND) | C(NL) | C(NO))
#define P_ (C(PC) | C(PD) | C(PS) | C(PE) | C(PI) | C(PF) | C(PO))
#define S_ (C(SM) | C(SC) | C(SK) | C(SO))
#define Z_ (C(ZS) | C(ZL) | C(ZP))
#define O_ (C(CC) | C(CF) | C(CS) | C(CO) | C(CN))

/* General_Category values with their aliases from PropertyValueAliases.txt,
 * which ECMA-262 accepts verbatim (names are case-sensitive). */
static const struct gc_name {
    const char *a, *b, *c;
    uint32_t    mask;
} gc_names[] = {
    {"L", "Letter", NULL, L_},
    {"LC", "Cased_Letter", NULL, C(LU) | C(LL) | C(LT)},
    {"Lu", "Uppercase_Letter", NULL, C(LU)},
    {"Ll", "Lowercase_Letter", NULL, C(LL)},
    {"Lt", "Titlecase_Letter", NULL, C(LT)},
    {"Lm", "Modifier_Letter", NULL, C(LM)},
    {"Lo", "Other_Letter", NULL, C(LO)},
    {"M", "Mark", "Combining_Mark", M_},
    {"Mn", "Nonspacing_Mark", NULL, C(MN)},
    {"Mc", "Spacing_Mark", NULL, C(MC)},
    {"Me", "Enclosing_Mark", NULL, C(ME)},
    {"N", "Number", NULL, N_},
    {"Nd", "Decimal_Number", "digit", C(ND)},
    {"Nl", "Letter_Number", NULL, C(NL)},
    {"No", "Other_Number", NULL, C(NO)},
    {"P", "Punctuation", "punct", P_},
    {"Pc", "Connector_Punctuation", NULL, C(PC)},
    {"Pd", "Dash_Punctuation", NULL, C(PD)},
    {"Ps", "Open_Punctuation", NULL, C(PS)},
    {"Pe", "Close_Punctuation", NULL, C(PE)},
    {"Pi", "Initial_Punctuation", NULL, C(PI)},
    {"Pf", "Final_Punctuation", NULL, C(PF)},
    {"Po", "Other_Punctuation", NULL, C(PO)},
    {"S", "Symbol", NULL, S_},
    {"Sm", "Math_Symbol", NULL, C(SM)},
    {"Sc", "Currency_Symbol", NULL, C(SC)},
    {"Sk", "Modifier_Symbol", NULL, C(SK)},
    {"So", "Other_Symbol", NULL, C(SO)},
    {"Z", "Separator", NULL, Z_},
    {"Zs", "Space_Separator", NULL, C(ZS)},
    {"Zl", "Line_Separator", NULL, C(ZL)},
    {"Zp", "Paragraph_Separator", NULL, C(ZP)},
    {"C", "Other", NULL, O_},
    {"Cc", "Control", "cntrl", C(CC)},
    {"Cf", "Format", NULL, C(CF)},
    {"Cs", "Surrogate", NULL, C(CS)},
    {"Co", "Private_Use", NULL, C(CO)},
    {"Cn", "Unassigned", NULL, C(CN)},
};

static int name_is(const char *s, size_t n, const char *lit)
{
    return lit && strlen(lit) == n && memcmp(s, lit, n) == 0;
}

static int add_mask(uint32_t mask, sx_rx_cset *out)
{
    for (int32_t i = 0; i < n_runs; i++) {
        if (mask & (1u << run_cat[i])) {
            int rc = sx_rx_cset_add(out, run_start[i], run_start[i + 1] - 1);
            if (rc)
                return rc;
        }
    }
    return SX_OK;
}

int sx_rx_unicode_property(const char *name, size_t len, sx_rx_cset *out,
                           const char **why)
{
    const char *eq = memchr(name, '=', len);
    const char *val = name;
    size_t vlen = len;
    if (eq) {
        size_t klen = (size_t)(eq - name);
        if (!name_is(name, klen, "General_Category") && !name_is(name, klen, "gc")) {
            *why = name_is(name, klen, "Script") || name_is(name, klen, "sc") ||
                           name_is(name, klen, "Script_Extensions") ||
                           name_is(name, klen, "scx")
                       ? "Unicode script properties are not supported"
                       : "unknown or unsupported Unicode property";
            return SX_EUNSUPPORTED;
        }
        val = eq + 1;
        vlen = len - klen - 1;
    } else if (name_is(name, len, "Any")) {
        return sx_rx_cset_add(out, 0, SX_RX_MAX_CP);
    } else if (name_is(name, len, "ASCII")) {
        return sx_rx_cset_add(out, 0, 0x7F);
    }
    pthread_once(&runs_once, build_runs);
    if (n_runs <= 0) {
        *why = "Unicode category table unavailable";
        return SX_EUNSUPPORTED;
    }
    if (!eq && name_is(name, len, "Assigned"))
        return add_mask(~C(CN), out);
    for (size_t i = 0; i < sizeof gc_names / sizeof gc_names[0]; i++) {
        const struct gc_name *g = &gc_names[i];
        if (name_is(val, vlen, g->a) || name_is(val, vlen, g->b) || name_is(val, vlen, g->c))
            return add_mask(g->mask, out);
    }
    *why = eq ? "unknown General_Category value"
              : "unknown or unsupported Unicode property (only General_Category, "
                "Any, ASCII and Assigned are supported)";
    return SX_EUNSUPPORTED;
}
