/* validator: an independent JSON Schema validator (draft 2020-12 and
 * draft-07), built on jansson and PCRE2 only.
 *
 * Contract of grammar/validator/ (val_*.c).  It includes nothing of the
 * grammar compiler, the matcher, the regex engine or the formats -- common/,
 * jansson and PCRE2 only -- so its verdict is an independent opinion;
 * tools/check_layout.py fails CI if that changes.
 *
 * strux re-checks every generated document with it, and the grammar tests
 * use it as their oracle, so it aims to be exact rather than forgiving:
 * a schema it cannot honour (an unknown $schema, a $ref that does not
 * resolve, a regex form PCRE2 cannot express with ECMA-262 semantics, a
 * malformed keyword) is a compile error naming the keyword and its JSON
 * Pointer, never a silently looser check.
 *
 * Supported: every assertion and applicator of 2020-12 and draft-07,
 * including $ref/$defs/definitions with JSON Pointer and $anchor fragments,
 * $id base changes, remote documents through a resolver, $dynamicRef/
 * $dynamicAnchor, unevaluatedProperties/unevaluatedItems, $vocabulary of a
 * custom meta-schema, and `format` (as an assertion by default; unknown
 * formats are ignored).  `pattern` has ECMA-262 semantics (see
 * val_regex.c).  Draft-04 and -06 schemas are read with their own keyword
 * sets (draft-04: `id`, boolean exclusiveMinimum/Maximum, 1.0 is not an
 * integer; no const/contains/propertyNames/if); 2019-09 as 2020-12 less
 * prefixItems and $dynamicRef ($recursiveRef is refused); draft-03 is
 * refused.  A 2020-12 schema that uses draft-07's array form of `items`
 * (with additionalItems) or `dependencies` gets their draft-07 meaning.
 * contentEncoding/contentMediaType and other annotations never fail.
 *
 * Failures: the first failure that decides the verdict is reported;
 * branches whose failure is expected (anyOf, oneOf, not, if, contains,
 * propertyNames) report at their own keyword.  Evaluation is bounded: a
 * nesting limit (max_depth), a PCRE2 match budget, and a $ref that
 * re-enters itself on the same instance is an SX_ELIMIT error, never a
 * stack overflow or a hang.
 *
 * Ownership: sx_val_compile deep-copies the schema, so the caller keeps
 * (and may change or free) what it passed.  A compiled sx_validator is
 * immutable; any number of threads may call sx_val_validate on it at once.
 * sx_val_free releases it and everything it holds. */
#ifndef SX_VALIDATOR_H
#define SX_VALIDATOR_H

#include <stddef.h>

#include <jansson.h>

#include "common/sx_error.h"

typedef struct sx_validator sx_validator;

/* Dialect used for a schema (or a remote document) without $schema.
 * DEFAULT means draft 2020-12; $schema, where present, always wins. */
enum sx_val_dialect {
    SX_VAL_DIALECT_DEFAULT = 0,
    SX_VAL_DRAFT2020_12,
    SX_VAL_DRAFT7,
};

/* How `format` is treated.  strux generates values that must satisfy their
 * formats, hence assertion is the default; ANNOTATE is the specification's
 * default (formats never fail) and what the official test suite assumes
 * outside its optional/format folder.  A meta-schema that lists the
 * format-assertion vocabulary turns assertion on regardless. */
enum sx_val_format {
    SX_VAL_FORMAT_ASSERT = 0,
    SX_VAL_FORMAT_ANNOTATE,
};

/* Fetches the document a remote $ref (or an unknown $schema) names.
 * `uri` is absolute and carries no fragment.  On success return 0 and set
 * *doc to a new reference the validator takes over (it is copied and then
 * released).  Return SX_ENOTFOUND when the URI is unknown, or any other
 * sx_code with a message in *err.  A document without $schema is read in
 * the dialect of the schema that refers to it.  Called only while
 * compiling, from the compiling thread. */
typedef int (*sx_val_resolve_fn)(void *ctx, const char *uri, json_t **doc,
                                 sx_error *err);

typedef struct sx_val_opts {
    int dialect;              /* enum sx_val_dialect */
    int format;               /* enum sx_val_format */
    sx_val_resolve_fn resolve; /* NULL: any remote $ref is a compile error */
    void *resolve_ctx;
    unsigned max_depth;       /* nesting limit for schemas and evaluation
                                 (each subschema applied counts one level,
                                 a $ref another); 0 means 256, at most
                                 4096 */
    unsigned long regex_match_limit; /* PCRE2 match limit per match;
                                        0 means 1,000,000 */
} sx_val_opts;

/* Compiles `schema` (an object or a boolean).  opts may be NULL (all
 * defaults).  On success *out is a new validator the caller frees with
 * sx_val_free.  On failure *out is NULL and err (if non-NULL) names the
 * problem, with err->pointer the JSON Pointer of the offending keyword in
 * its document (the message names the document when it is not the root).
 * Errors: SX_EFORMAT (malformed schema), SX_EUNSUPPORTED, SX_ENOTFOUND
 * (unresolvable $ref), SX_ELIMIT (nesting), SX_ENOMEM, SX_EINVAL. */
int sx_val_compile(const json_t *schema, const sx_val_opts *opts,
                   sx_validator **out, sx_error *err);

/* Validates `instance`.  Returns 0 and sets *valid to 1 or 0; when 0 and
 * `why` is non-NULL, why->pointer is the schema JSON Pointer of the failing
 * keyword and why->msg reads
 *     instance "<instance JSON Pointer>": <keyword>: <detail>
 * with " (in <uri>)" appended when the keyword lives in a remote document
 * (why->code stays SX_OK: an invalid instance is not an error).
 * A non-zero return means no verdict could be reached: SX_ELIMIT (nesting
 * or regex backtracking budget), SX_EUTF8 (a string that is not UTF-8),
 * SX_ENOMEM; `why` then carries the error. */
int sx_val_validate(const sx_validator *v, const json_t *instance, int *valid,
                    sx_error *why);

/* Validates the JSON text[0..len) (any value at the top, \u0000 allowed):
 * as sx_val_validate, but numbers are judged on the digits written --
 * integers and decimals of any length and exponent, compared exactly
 * against minimum/maximum/exclusive*, multipleOf, enum, const and
 * uniqueItems (common/sx_numjson.h).  A text that is not JSON is
 * SX_EFORMAT with the byte offset in why->offset.  Prefer it wherever the
 * instance is text: jansson cannot read integers beyond 64 bits. */
int sx_val_validate_text(const sx_validator *v, const char *text, size_t len,
                         int *valid, sx_error *why);

/* Releases v and everything it owns.  NULL is allowed. */
void sx_val_free(sx_validator *v);

/* Convenience: parses schema and instance text (UTF-8 JSON; \u0000 allowed),
 * compiles and validates.  Parse errors are SX_EFORMAT with the byte offset
 * in err->offset and "schema"/"instance" in the message. */
int sx_val_check_text(const char *schema, size_t schema_len,
                      const char *instance, size_t instance_len,
                      const sx_val_opts *opts, int *valid, sx_error *err);

/* Checks the string s[0..len) against a named format ("date-time",
 * "email", ...): returns 0 and sets *ok to 1 or 0, or returns SX_ENOTFOUND
 * for a format the validator does not know (and therefore ignores). */
int sx_val_format_check(const char *format, const char *s, size_t len,
                        int *ok);

#endif
