/* validator: the public entry points of the JSON Schema validator. */
#include <stdlib.h>
#include <string.h>

#include "grammar/validator/val_internal.h"

#define SXV_DEFAULT_DEPTH 256u
#define SXV_MAX_DEPTH 4096u
#define SXV_DEFAULT_MATCH_LIMIT 1000000ul
#define SXV_INSTANCE_DEPTH 2048u

int sxv_keep_regex(sx_validator *v, pcre2_code *re)
{
    sxv_regex_ent *e = sxv_alloc(&v->arena, sizeof *e);
    if (!e)
        return SX_ENOMEM;
    e->code = re;
    e->next = v->regexes;
    v->regexes = e;
    return SX_OK;
}

void sx_val_free(sx_validator *v)
{
    if (!v)
        return;
    for (sxv_regex_ent *e = v->regexes; e; e = e->next)
        pcre2_code_free(e->code);
    for (sxv_doc *d = v->docs; d; d = d->next)
        json_decref(d->root);
    pcre2_match_context_free(v->mctx);
    sxv_arena_free(&v->arena);
    free(v);
}

int sx_val_compile(const json_t *schema, const sx_val_opts *opts,
                   sx_validator **out, sx_error *err)
{
    static const sx_val_opts defaults;
    sx_err_clear(err);
    if (!out)
        return sx_err_set(err, SX_EINVAL, "sx_val_compile: out is NULL");
    *out = NULL;
    if (!schema)
        return sx_err_set(err, SX_EINVAL, "sx_val_compile: schema is NULL");
    if (!opts)
        opts = &defaults;
    if (opts->dialect < SX_VAL_DIALECT_DEFAULT || opts->dialect > SX_VAL_DRAFT7 ||
        opts->format < SX_VAL_FORMAT_ASSERT ||
        opts->format > SX_VAL_FORMAT_ANNOTATE)
        return sx_err_set(err, SX_EINVAL, "sx_val_compile: bad options");
    sx_validator *v = calloc(1, sizeof *v);
    if (!v)
        return sx_err_set(err, SX_ENOMEM, "out of memory");
    v->max_depth = opts->max_depth ? opts->max_depth : SXV_DEFAULT_DEPTH;
    if (v->max_depth > SXV_MAX_DEPTH)
        v->max_depth = SXV_MAX_DEPTH;
    int rc;
    v->mctx = pcre2_match_context_create(NULL);
    if (!v->mctx) {
        rc = sx_err_set(err, SX_ENOMEM, "out of memory");
        goto fail;
    }
    unsigned long limit = opts->regex_match_limit ? opts->regex_match_limit
                                                  : SXV_DEFAULT_MATCH_LIMIT;
    v->match_limit = limit;
    pcre2_set_match_limit(v->mctx, (uint32_t)(limit > 0xffffffffu ? 0xffffffffu
                                                                  : limit));
    pcre2_set_depth_limit(v->mctx, 10000);
    pcre2_set_heap_limit(v->mctx, 20000); /* KiB */
    if (!sxv_json_depth_ok(schema, 2 * v->max_depth + 8)) {
        rc = sx_err_set(err, SX_ELIMIT, "schema nested more than %u levels",
                        2 * v->max_depth + 8);
        goto fail;
    }
    /* a private copy: the caller may change or free its schema */
    json_t *copy = json_deep_copy(schema);
    if (!copy) {
        rc = sx_err_set(err, SX_ENOMEM, "out of memory copying the schema");
        goto fail;
    }
    rc = sxv_build(v, copy, opts, err);
    if (rc)
        goto fail;
    *out = v;
    return SX_OK;
fail:
    sx_val_free(v);
    return rc;
}

static int validate(const sx_validator *v, const json_t *instance,
                    const sx_numtab *nums, int *valid, sx_error *why)
{
    sx_err_clear(why);
    if (!v || !instance || !valid)
        return sx_err_set(why, SX_EINVAL, "sx_val_validate: NULL argument");
    *valid = 0;
    if (!sxv_json_depth_ok(instance, SXV_INSTANCE_DEPTH))
        return sx_err_set(why, SX_ELIMIT, "instance nested more than %u "
                                          "levels", SXV_INSTANCE_DEPTH);
    sxv_ctx c;
    memset(&c, 0, sizeof c);
    c.v = v;
    c.why = why;
    c.nums = nums;
    size_t cap = (size_t)v->max_depth + 2;
    c.path = malloc(cap * sizeof *c.path);
    c.scope = malloc(cap * sizeof *c.scope);
    c.refs = malloc(cap * sizeof *c.refs);
    c.md = pcre2_match_data_create(1, NULL);
    int rc = SX_OK;
    if (!c.path || !c.scope || !c.refs || !c.md) {
        rc = sx_err_set(why, SX_ENOMEM, "out of memory");
        goto done;
    }
    int r = sxv_eval(&c, v->root, instance, NULL);
    if (r == SXV_ERROR)
        rc = c.err ? c.err : SX_EINTERNAL;
    else
        *valid = r == SXV_VALID;
done:
    free(c.path);
    free(c.scope);
    free(c.refs);
    pcre2_match_data_free(c.md);
    pcre2_match_context_free(c.mc_long);
    return rc;
}

int sx_val_validate(const sx_validator *v, const json_t *instance, int *valid,
                    sx_error *why)
{
    return validate(v, instance, NULL, valid, why);
}

int sx_val_validate_text(const sx_validator *v, const char *text, size_t len,
                         int *valid, sx_error *why)
{
    sx_err_clear(why);
    if (!v || !text || !valid)
        return sx_err_set(why, SX_EINVAL, "sx_val_validate_text: NULL argument");
    *valid = 0;
    sx_numtab nums = {0};
    json_error_t je;
    json_t *x = sx_numjson_loadb(text, len, 0, &nums, &je);
    if (!x)
        return sx_err_setp(why, SX_EFORMAT, NULL, (long)je.position,
                           "instance: %s (line %d, column %d)", je.text, je.line,
                           je.column);
    int rc = validate(v, x, &nums, valid, why);
    sx_numtab_free(&nums);
    json_decref(x);
    return rc;
}

static int parse(const char *what, const char *text, size_t len, json_t **out,
                 sx_error *err)
{
    json_error_t je;
    *out = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!*out)
        return sx_err_setp(err, SX_EFORMAT, NULL, je.position,
                           "%s: %s (line %d, column %d)", what, je.text,
                           je.line, je.column);
    return SX_OK;
}

int sx_val_check_text(const char *schema, size_t schema_len,
                      const char *instance, size_t instance_len,
                      const sx_val_opts *opts, int *valid, sx_error *err)
{
    json_t *s = NULL, *i = NULL;
    sx_validator *v = NULL;
    sx_err_clear(err);
    if (!schema || !instance || !valid)
        return sx_err_set(err, SX_EINVAL, "sx_val_check_text: NULL argument");
    *valid = 0;
    int rc = parse("schema", schema, schema_len, &s, err);
    if (rc)
        goto done;
    rc = sx_val_compile(s, opts, &v, err);
    if (rc)
        goto done;
    rc = sx_val_validate_text(v, instance, instance_len, valid, err);
done:
    sx_val_free(v);
    json_decref(s);
    json_decref(i);
    return rc;
}
