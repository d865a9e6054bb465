/* libFuzzer target for grammar/validator.
 *
 * Input: one option byte, then the schema text, a NUL byte, and the
 * instance text (a raw NUL cannot occur in JSON text, so it splits
 * cleanly).  Option bits: 1 draft-07, 2 format as annotation.  Any
 * "http://f/..." $ref resolves to the schema itself, which exercises remote
 * documents and reference cycles.  The validator must never crash, leak or
 * hang: depth and regex budgets are kept small. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "grammar/validator/validator.h"

typedef struct fz {
    const char *schema;
    size_t len;
} fz;

static int resolve(void *ctx, const char *uri, json_t **doc, sx_error *err)
{
    const fz *f = ctx;
    if (strncmp(uri, "http://f/", 9))
        return sx_err_set(err, SX_ENOTFOUND, "unknown");
    json_error_t je;
    *doc = json_loadb(f->schema, f->len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    return *doc ? SX_OK : SX_EFORMAT;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > 8192)
        return 0;
    unsigned opt = data[0];
    const char *text = (const char *)data + 1;
    size_t n = size - 1;
    const char *nul = memchr(text, '\0', n);
    if (!nul)
        return 0;
    fz f = {text, (size_t)(nul - text)};
    const char *inst = nul + 1;
    size_t ilen = n - f.len - 1;

    sx_val_opts o = {0};
    o.dialect = opt & 1 ? SX_VAL_DRAFT7 : SX_VAL_DIALECT_DEFAULT;
    o.format = opt & 2 ? SX_VAL_FORMAT_ANNOTATE : SX_VAL_FORMAT_ASSERT;
    o.resolve = resolve;
    o.resolve_ctx = &f;
    o.max_depth = 64;
    o.regex_match_limit = 20000;

    json_error_t je;
    json_t *s = json_loadb(f.schema, f.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    json_t *x = json_loadb(inst, ilen, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (s && x) {
        sx_validator *v = NULL;
        sx_error e;
        if (sx_val_compile(s, &o, &v, &e) == SX_OK) {
            int valid = -1;
            sx_val_validate(v, x, &valid, &e);
            sx_val_free(v);
        }
    }
    /* the format checkers on any string instance */
    if (json_is_string(x)) {
        static const char *const formats[] = {
            "date", "time", "date-time", "duration", "email", "idn-email",
            "hostname", "idn-hostname", "ipv4", "ipv6", "uuid", "uri",
            "uri-reference", "iri", "iri-reference", "uri-template",
            "json-pointer", "relative-json-pointer", "regex"};
        for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
            int ok;
            sx_val_format_check(formats[i], json_string_value(x),
                                json_string_length(x), &ok);
        }
    }
    json_decref(s);
    json_decref(x);
    return 0;
}
