/* The JSON Schema keywords the compiler reads, in one table: each name's
 * id, whether it constrains values or only annotates them, the JSON types
 * it applies to, and the draft that introduced it where strux enforces
 * that.  The walkers and rewrites of grammar/compile/ dispatch on ids
 * (gc_kw_id) instead of comparing names; a name not in the table is an
 * unknown keyword, which JSON Schema ignores.
 *
 * Exports, to the compiler's files only: gc_kw, its flags and type bits,
 * gc_kw_id, gc_kw_name, gc_kw_flags, gc_kw_types. */
#ifndef SX_GR_KEYWORDS_H
#define SX_GR_KEYWORDS_H

/* Keyword ids; the order is the names' byte order (gc_kw_id bisects). */
typedef enum gc_kw {
    GK_ANCHOR,
    GK_COMMENT,
    GK_DEFS,
    GK_DYNAMIC_ANCHOR,
    GK_DYNAMIC_REF,
    GK_ID,
    GK_RECURSIVE_ANCHOR,
    GK_RECURSIVE_REF,
    GK_REF,
    GK_SCHEMA,
    GK_MORE_CONTAINS,
    GK_MORE_PATTERNS,
    GK_VOCABULARY,
    GK_ADDITIONAL_ITEMS,
    GK_ADDITIONAL_PROPERTIES,
    GK_ALL_OF,
    GK_ANY_OF,
    GK_CONST,
    GK_CONTAINS,
    GK_CONTENT_ENCODING,
    GK_CONTENT_MEDIA_TYPE,
    GK_CONTENT_SCHEMA,
    GK_DEFAULT,
    GK_DEFINITIONS,
    GK_DEPENDENCIES,
    GK_DEPENDENT_REQUIRED,
    GK_DEPENDENT_SCHEMAS,
    GK_DEPRECATED,
    GK_DESCRIPTION,
    GK_ELSE,
    GK_ENUM,
    GK_EXAMPLES,
    GK_EXCLUSIVE_MAXIMUM,
    GK_EXCLUSIVE_MINIMUM,
    GK_FORMAT,
    GK_ID4,
    GK_IF,
    GK_ITEMS,
    GK_MAX_CONTAINS,
    GK_MAX_ITEMS,
    GK_MAX_LENGTH,
    GK_MAX_PROPERTIES,
    GK_MAXIMUM,
    GK_MIN_CONTAINS,
    GK_MIN_ITEMS,
    GK_MIN_LENGTH,
    GK_MIN_PROPERTIES,
    GK_MINIMUM,
    GK_MULTIPLE_OF,
    GK_NOT,
    GK_ONE_OF,
    GK_PATTERN,
    GK_PATTERN_PROPERTIES,
    GK_PREFIX_ITEMS,
    GK_PROPERTIES,
    GK_PROPERTY_NAMES,
    GK_READ_ONLY,
    GK_REQUIRED,
    GK_THEN,
    GK_TITLE,
    GK_TYPE,
    GK_UNEVALUATED_ITEMS,
    GK_UNEVALUATED_PROPERTIES,
    GK_UNIQUE_ITEMS,
    GK_WRITE_ONLY,
    GK_COUNT,
    GK_UNKNOWN = GK_COUNT /* a name the table does not hold */
} gc_kw;

/* Flags of a keyword. */
enum {
    GK_ANNOTATION = 1, /* never constrains a value (title, $defs, ...) */
    GK_ASSERTION = 2,  /* constrains values (applicators included) */
    GK_APPLICATOR = 4, /* applies subschemas to the instance itself */
    GK_LOWER = 8,      /* a lower bound: allOf keeps the largest */
    GK_UPPER = 16,     /* an upper bound: allOf keeps the smallest */
    GK_SINCE7 = 32     /* an unknown keyword before draft-07 */
};

/* JSON type bits (the walkers' own type sets use the same values). */
enum {
    GK_T_NULL = 1, GK_T_BOOL = 2, GK_T_INT = 4, GK_T_NUM = 8, GK_T_STR = 16, GK_T_OBJ = 32,
    GK_T_ARR = 64
};

/* The keyword named s, or GK_UNKNOWN. */
gc_kw gc_kw_id(const char *s);
/* The name of keyword k (k < GK_COUNT). */
const char *gc_kw_name(gc_kw k);
/* GK_* flags of k; 0 for GK_UNKNOWN. */
unsigned gc_kw_flags(gc_kw k);
/* The types k constrains alone (GK_T_* bits; GK_T_INT | GK_T_NUM for the
 * numeric keywords); 0 for keywords that apply to every value (type, enum,
 * const, applicators), annotations and unknown keywords. */
unsigned gc_kw_types(gc_kw k);

#endif
