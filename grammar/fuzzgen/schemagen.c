/* Random JSON Schemas from the keywords strux supports (schemagen.h). */
#include <stdio.h>
#include <string.h>

#include "grammar/fuzzgen/schemagen.h"

typedef struct sg {
    uint64_t s;     /* splitmix64 state */
    int budget;     /* subschemas still to make */
    int n_defs;     /* $defs d0..d(n-1) that $ref may name */
} sg;

static uint64_t next(sg *g)
{
    uint64_t z = (g->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* 0..n-1 */
static int pick(sg *g, int n)
{
    return (int)(next(g) % (uint64_t)n);
}

static int chance(sg *g, int percent)
{
    return pick(g, 100) < percent;
}

static const char *const KEYS[] = {"a", "b", "id", "name", "tags", "x-y", "n"};
#define N_KEYS (int)(sizeof KEYS / sizeof KEYS[0])
static const char *const PATTERNS[] = {
    "^[a-z]+$", "^[A-Z][a-z0-9_]*$", "^\\d{3}-\\d{2}$", "^(ab|cd)*$", "x", "^[a-f0-9]{2,8}$",
    "^([a-z])([a-z0-9-])*$", "^.{0,5}$",
};
#define N_PATTERNS (int)(sizeof PATTERNS / sizeof PATTERNS[0])
static const char *const FORMATS[] = {"date", "date-time", "email", "uuid", "ipv4", "time", "uri"};
static const char *const TYPES[] = {"string", "integer", "number", "boolean", "null", "object",
                                    "array"};

static json_t *gen(sg *g, int depth);

static void set(json_t *o, const char *k, json_t *v)
{
    if (v)
        json_object_set_new(o, k, v);
}

static json_t *gen_string(sg *g)
{
    json_t *s = json_pack("{s:s}", "type", "string");
    if (!s)
        return NULL;
    int lo = -1;
    if (chance(g, 40))
        set(s, "minLength", json_integer(lo = pick(g, 4)));
    if (chance(g, 40))
        set(s, "maxLength", json_integer((lo > 0 ? lo : 0) + pick(g, 12)));
    if (chance(g, 30))
        set(s, "pattern", json_string(PATTERNS[pick(g, N_PATTERNS)]));
    else if (chance(g, 20))
        set(s, "format", json_string(FORMATS[pick(g, (int)(sizeof FORMATS / sizeof *FORMATS))]));
    if (chance(g, 10))
        set(s, "not", json_pack("{s:[s,s]}", "enum", "a", "b"));
    return s;
}

static json_t *gen_number(sg *g)
{
    int integer = chance(g, 50);
    json_t *s = json_pack("{s:s}", "type", integer ? "integer" : "number");
    if (!s)
        return NULL;
    int lo = pick(g, 200) - 100;
    /* one draw per statement: the order of a call's arguments is not
     * fixed in C, and a seed must make the same schema everywhere */
    if (chance(g, 50)) {
        const char *kw = chance(g, 70) ? "minimum" : "exclusiveMinimum";
        set(s, kw, integer || chance(g, 50) ? json_integer(lo) : json_real(lo + 0.25));
    }
    if (chance(g, 50)) {
        const char *kw = chance(g, 70) ? "maximum" : "exclusiveMaximum";
        set(s, kw, json_integer(lo + 1 + pick(g, 300)));
    }
    if (chance(g, 30)) {
        static const double M[] = {2, 3, 5, 0.5, 0.01, 0.25, 10};
        double m = M[pick(g, 7)];
        set(s, "multipleOf", m == (int)m ? json_integer((int)m) : json_real(m));
    }
    return s;
}

static json_t *gen_object(sg *g, int depth)
{
    json_t *s = json_pack("{s:s}", "type", "object"), *props = json_object(), *req = json_array();
    if (!s || !props || !req) {
        json_decref(s);
        json_decref(props);
        json_decref(req);
        return NULL;
    }
    int np = pick(g, 4), optional_only = chance(g, 30);
    for (int i = 0; i < np; i++) {
        const char *k = KEYS[pick(g, N_KEYS)];
        if (json_object_get(props, k))
            continue;
        set(props, k, gen(g, depth + 1));
        if (!optional_only && chance(g, 50))
            json_array_append_new(req, json_string(k));
    }
    json_object_set_new(s, "properties", props);
    if (json_array_size(req))
        json_object_set_new(s, "required", req);
    else
        json_decref(req);
    int r = pick(g, 10);
    if (r < 3)
        set(s, "additionalProperties", json_false());
    else if (r < 5)
        set(s, "additionalProperties", gen(g, depth + 1));
    if (chance(g, 20))
        set(s, "patternProperties", json_pack("{s:o}", "^p[0-9]$", gen(g, depth + 1)));
    if (chance(g, 15))
        set(s, "minProperties", json_integer(pick(g, 3)));
    if (chance(g, 15))
        set(s, "maxProperties", json_integer(1 + pick(g, 4)));
    if (chance(g, 10))
        set(s, "propertyNames", json_pack("{s:i}", "maxLength", 4 + pick(g, 4)));
    if (np && chance(g, 15)) {
        const char *a = KEYS[pick(g, N_KEYS)], *b = KEYS[pick(g, N_KEYS)];
        if (strcmp(a, b))
            set(s, "dependentRequired", json_pack("{s:[s]}", a, b));
    }
    if (np && chance(g, 10)) {
        const char *a = KEYS[pick(g, N_KEYS)], *b = KEYS[pick(g, N_KEYS)];
        set(s, "dependentSchemas", json_pack("{s:{s:[s]}}", a, "required", b));
    }
    return s;
}

static json_t *gen_array(sg *g, int depth)
{
    json_t *s = json_pack("{s:s}", "type", "array");
    if (!s)
        return NULL;
    int unique = chance(g, 20);
    /* unique items of scalars (objects and arrays of them may be refused) */
    set(s, "items", unique && chance(g, 60) ? gen_string(g) : gen(g, depth + 1));
    if (chance(g, 15)) {
        json_t *pre = json_array();
        int n = 1 + pick(g, 2);
        for (int i = 0; pre && i < n; i++)
            json_array_append_new(pre, gen(g, depth + 1));
        set(s, "prefixItems", pre);
    }
    int lo = -1;
    if (chance(g, 40))
        set(s, "minItems", json_integer(lo = pick(g, 3)));
    if (chance(g, 30))
        set(s, "maxItems", json_integer((lo > 0 ? lo : 0) + pick(g, 5)));
    if (unique)
        set(s, "uniqueItems", json_true());
    if (chance(g, 15)) {
        set(s, "contains", gen(g, depth + 1));
        if (chance(g, 40))
            set(s, "minContains", json_integer(pick(g, 3)));
        if (chance(g, 30))
            set(s, "maxContains", json_integer(1 + pick(g, 3)));
    }
    return s;
}

static json_t *gen_list(sg *g, int depth, int n)
{
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++)
        json_array_append_new(a, gen(g, depth + 1));
    return a;
}

/* One subschema; deep or out of budget: a leaf (scalar or $ref). */
static json_t *gen(sg *g, int depth)
{
    char ref[32];
    g->budget--;
    if (g->budget <= 0 || depth > 6) {
        if (g->n_defs && chance(g, 30)) {
            snprintf(ref, sizeof ref, "#/$defs/d%d", pick(g, g->n_defs));
            return json_pack("{s:s}", "$ref", ref);
        }
        switch (pick(g, 4)) {
        case 0: return gen_string(g);
        case 1: return gen_number(g);
        case 2: return json_pack("{s:s}", "type", chance(g, 50) ? "boolean" : "null");
        default: return json_pack("{s:[s,i,b]}", "enum", "x", pick(g, 5), 1);
        }
    }
    switch (pick(g, 16)) {
    case 0:
    case 1: return gen_string(g);
    case 2: return gen_number(g);
    case 3: return json_pack("{s:s}", "type", TYPES[pick(g, 5)]);
    case 4:
    case 5:
    case 6: return gen_object(g, depth);
    case 7:
    case 8: return gen_array(g, depth);
    case 9: return json_pack("{s:o}", "anyOf", gen_list(g, depth, 2 + pick(g, 2)));
    case 10: return json_pack("{s:o}", "oneOf", gen_list(g, depth, 2 + pick(g, 2)));
    case 11: {
        json_t *s = gen_object(g, depth);
        if (s)
            set(s, "allOf", gen_list(g, depth, 1 + pick(g, 2)));
        return s;
    }
    case 12: {
        const char *k = KEYS[pick(g, N_KEYS)];
        json_t *th = gen(g, depth + 1);
        json_t *s = json_pack("{s:{s:[s]}, s:o}", "if", "required", k, "then", th);
        if (s && chance(g, 60))
            set(s, "else", gen(g, depth + 1));
        return s;
    }
    case 13:
        if (chance(g, 50))
            return json_pack("{s:{s:s}}", "not", "type", TYPES[pick(g, 7)]);
        return json_pack("{s:{s:[s]}}", "not", "required", KEYS[pick(g, N_KEYS)]);
    case 14:
        return json_pack("{s:o}", "const", chance(g, 50) ? json_string("k") : json_integer(7));
    default:
        if (g->n_defs) {
            snprintf(ref, sizeof ref, "#/$defs/d%d", pick(g, g->n_defs));
            return json_pack("{s:s}", "$ref", ref);
        }
        return gen_string(g);
    }
}

json_t *sx_sg_schema(uint64_t seed, uint64_t index, int size)
{
    sg g = {.s = seed * 0x2545F4914F6CDD1DULL + index * 0x9E3779B97F4A7C15ULL + 1};
    if (size < 1)
        size = 1;
    if (size > 8)
        size = 8;
    next(&g);
    g.n_defs = pick(&g, 3); /* 0: no recursion; else defs that may name each other */
    json_t *defs = g.n_defs ? json_object() : NULL, *root = NULL;
    for (int i = 0; i < g.n_defs; i++) {
        char name[8];
        snprintf(name, sizeof name, "d%d", i);
        g.budget = 2 + pick(&g, 4 * size);
        set(defs, name, gen(&g, 1));
    }
    g.budget = 2 + pick(&g, 4 * size);
    if (g.n_defs && chance(&g, 40))
        root = json_pack("{s:s}", "$ref", "#/$defs/d0");
    else
        root = gen(&g, 0);
    if (root && defs)
        json_object_set_new(root, "$defs", defs);
    else
        json_decref(defs);
    return root;
}
