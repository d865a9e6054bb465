/* The keyword table (keywords.h). */
#include <string.h>

#include "grammar/compile/compile.h"
#include "grammar/compile/keywords.h"

enum { GK_STR = GK_T_STR, GK_NUM = GK_T_INT | GK_T_NUM, GK_OBJ = GK_T_OBJ, GK_ARR = GK_T_ARR };

static const struct {
    const char *name;
    unsigned flags;
    unsigned types;
} table[GK_COUNT] = {
    [GK_ANCHOR] = {"$anchor", GK_ANNOTATION, 0},
    [GK_COMMENT] = {"$comment", GK_ANNOTATION, 0},
    [GK_DEFS] = {"$defs", GK_ANNOTATION, 0},
    [GK_DYNAMIC_ANCHOR] = {"$dynamicAnchor", GK_ANNOTATION, 0},
    [GK_DYNAMIC_REF] = {"$dynamicRef", GK_ASSERTION | GK_APPLICATOR, 0},
    [GK_ID] = {"$id", GK_ANNOTATION, 0},
    [GK_RECURSIVE_ANCHOR] = {"$recursiveAnchor", GK_ASSERTION, 0},
    [GK_RECURSIVE_REF] = {"$recursiveRef", GK_ASSERTION, 0},
    [GK_REF] = {"$ref", GK_ASSERTION | GK_APPLICATOR, 0},
    [GK_SCHEMA] = {"$schema", GK_ANNOTATION, 0},
    [GK_MORE_CONTAINS] = {GC_MORE_CONTAINS, GK_ASSERTION, GK_ARR},
    [GK_MORE_PATTERNS] = {GC_MORE_PATTERNS, GK_ASSERTION, 0},
    [GK_VOCABULARY] = {"$vocabulary", GK_ANNOTATION, 0},
    [GK_ADDITIONAL_ITEMS] = {"additionalItems", GK_ASSERTION, GK_ARR},
    [GK_ADDITIONAL_PROPERTIES] = {"additionalProperties", GK_ASSERTION, GK_OBJ},
    [GK_ALL_OF] = {"allOf", GK_ASSERTION | GK_APPLICATOR, 0},
    [GK_ANY_OF] = {"anyOf", GK_ASSERTION | GK_APPLICATOR, 0},
    [GK_CONST] = {"const", GK_ASSERTION, 0},
    [GK_CONTAINS] = {"contains", GK_ASSERTION, GK_ARR},
    [GK_CONTENT_ENCODING] = {"contentEncoding", GK_ANNOTATION, 0},
    [GK_CONTENT_MEDIA_TYPE] = {"contentMediaType", GK_ANNOTATION, 0},
    [GK_CONTENT_SCHEMA] = {"contentSchema", GK_ANNOTATION, 0},
    [GK_DEFAULT] = {"default", GK_ANNOTATION, 0},
    [GK_DEFINITIONS] = {"definitions", GK_ANNOTATION, 0},
    [GK_DEPENDENCIES] = {"dependencies", GK_ASSERTION | GK_APPLICATOR, GK_OBJ},
    [GK_DEPENDENT_REQUIRED] = {"dependentRequired", GK_ASSERTION, GK_OBJ},
    [GK_DEPENDENT_SCHEMAS] = {"dependentSchemas", GK_ASSERTION | GK_APPLICATOR, GK_OBJ},
    [GK_DEPRECATED] = {"deprecated", GK_ANNOTATION, 0},
    [GK_DESCRIPTION] = {"description", GK_ANNOTATION, 0},
    [GK_ELSE] = {"else", GK_ASSERTION | GK_SINCE7, 0},
    [GK_ENUM] = {"enum", GK_ASSERTION, 0},
    [GK_EXAMPLES] = {"examples", GK_ANNOTATION, 0},
    [GK_EXCLUSIVE_MAXIMUM] = {"exclusiveMaximum", GK_ASSERTION | GK_UPPER, GK_NUM},
    [GK_EXCLUSIVE_MINIMUM] = {"exclusiveMinimum", GK_ASSERTION | GK_LOWER, GK_NUM},
    [GK_FORMAT] = {"format", GK_ASSERTION, GK_STR},
    [GK_ID4] = {"id", GK_ANNOTATION, 0},
    [GK_IF] = {"if", GK_ASSERTION | GK_APPLICATOR | GK_SINCE7, 0},
    [GK_ITEMS] = {"items", GK_ASSERTION, GK_ARR},
    [GK_MAX_CONTAINS] = {"maxContains", GK_ASSERTION, GK_ARR},
    [GK_MAX_ITEMS] = {"maxItems", GK_ASSERTION | GK_UPPER, GK_ARR},
    [GK_MAX_LENGTH] = {"maxLength", GK_ASSERTION | GK_UPPER, GK_STR},
    [GK_MAX_PROPERTIES] = {"maxProperties", GK_ASSERTION | GK_UPPER, GK_OBJ},
    [GK_MAXIMUM] = {"maximum", GK_ASSERTION | GK_UPPER, GK_NUM},
    [GK_MIN_CONTAINS] = {"minContains", GK_ASSERTION, GK_ARR},
    [GK_MIN_ITEMS] = {"minItems", GK_ASSERTION | GK_LOWER, GK_ARR},
    [GK_MIN_LENGTH] = {"minLength", GK_ASSERTION | GK_LOWER, GK_STR},
    [GK_MIN_PROPERTIES] = {"minProperties", GK_ASSERTION | GK_LOWER, GK_OBJ},
    [GK_MINIMUM] = {"minimum", GK_ASSERTION | GK_LOWER, GK_NUM},
    [GK_MULTIPLE_OF] = {"multipleOf", GK_ASSERTION, GK_NUM},
    [GK_NOT] = {"not", GK_ASSERTION | GK_APPLICATOR, 0},
    [GK_ONE_OF] = {"oneOf", GK_ASSERTION | GK_APPLICATOR, 0},
    [GK_PATTERN] = {"pattern", GK_ASSERTION, GK_STR},
    [GK_PATTERN_PROPERTIES] = {"patternProperties", GK_ASSERTION, GK_OBJ},
    [GK_PREFIX_ITEMS] = {"prefixItems", GK_ASSERTION, GK_ARR},
    [GK_PROPERTIES] = {"properties", GK_ASSERTION, GK_OBJ},
    [GK_PROPERTY_NAMES] = {"propertyNames", GK_ASSERTION, GK_OBJ},
    [GK_READ_ONLY] = {"readOnly", GK_ANNOTATION, 0},
    [GK_REQUIRED] = {"required", GK_ASSERTION, GK_OBJ},
    [GK_THEN] = {"then", GK_ASSERTION | GK_SINCE7, 0},
    [GK_TITLE] = {"title", GK_ANNOTATION, 0},
    [GK_TYPE] = {"type", GK_ASSERTION, 0},
    [GK_UNEVALUATED_ITEMS] = {"unevaluatedItems", GK_ASSERTION, GK_ARR},
    [GK_UNEVALUATED_PROPERTIES] = {"unevaluatedProperties", GK_ASSERTION, GK_OBJ},
    [GK_UNIQUE_ITEMS] = {"uniqueItems", GK_ASSERTION, GK_ARR},
    [GK_WRITE_ONLY] = {"writeOnly", GK_ANNOTATION, 0},
};

gc_kw gc_kw_id(const char *s)
{
    int lo = 0, hi = GK_COUNT - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        /* most probes differ in the first byte: no call for those */
        int d = (unsigned char)s[0] - (unsigned char)table[mid].name[0];
        if (!d)
            d = strcmp(s, table[mid].name);
        if (!d)
            return (gc_kw)mid;
        if (d < 0)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return GK_UNKNOWN;
}

const char *gc_kw_name(gc_kw k)
{
    return k < GK_COUNT ? table[k].name : NULL;
}

unsigned gc_kw_flags(gc_kw k)
{
    return k < GK_COUNT ? table[k].flags : 0;
}

unsigned gc_kw_types(gc_kw k)
{
    return k < GK_COUNT ? table[k].types : 0;
}

int gc_is_assertion(const char *kw)
{
    return (gc_kw_flags(gc_kw_id(kw)) & GK_ASSERTION) != 0;
}
