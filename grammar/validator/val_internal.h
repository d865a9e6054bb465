/* val_internal.h: what the validator's files share.  Not a public header:
 * only grammar/validator*.c and grammar/val_*.c include it.
 *
 * Memory: every node, string and table of a compiled validator lives in
 * one arena (sxv_arena) freed at once by sx_val_free; PCRE2 codes are kept
 * on a list beside it; schema documents are deep copies the validator owns,
 * and nodes point into them. */
#ifndef SX_VAL_INTERNAL_H
#define SX_VAL_INTERNAL_H

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>
#include <stdint.h>

#include "common/sx_numjson.h"
#include "grammar/validator/validator.h"

/* ---- arena, buffers, maps (val_util.c) ---------------------------------- */

typedef struct sxv_block sxv_block;
typedef struct sxv_arena {
    sxv_block *head;
} sxv_arena;

void *sxv_alloc(sxv_arena *a, size_t n);                 /* zeroed, NULL on OOM */
char *sxv_strndup(sxv_arena *a, const char *s, size_t n); /* NUL-terminated */
void sxv_arena_free(sxv_arena *a);

/* A growable heap string; after an allocation failure `oom` is set and
 * further appends are ignored, so callers check once at the end. */
typedef struct sxv_buf {
    char *p;
    size_t len, cap;
    int oom;
} sxv_buf;

void sxv_buf_add(sxv_buf *b, const char *s, size_t n);
void sxv_buf_adds(sxv_buf *b, const char *s);
void sxv_buf_addc(sxv_buf *b, char c);
void sxv_buf_addf(sxv_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void sxv_buf_ptrseg(sxv_buf *b, const char *seg, size_t n); /* "/" + escaped */
void sxv_buf_free(sxv_buf *b);

/* Hash map from a byte string (copied) to a pointer. */
typedef struct sxv_slot sxv_slot;
typedef struct sxv_map {
    sxv_slot *slots;
    size_t cap, n;
} sxv_map;

int sxv_map_put(sxv_map *m, const void *key, size_t klen, void *val);
void *sxv_map_get(const sxv_map *m, const void *key, size_t klen);
void sxv_map_free(sxv_map *m);

/* UTF-8: decodes the code point at s[*i] and advances *i; -1 if malformed. */
long sxv_utf8_next(const char *s, size_t len, size_t *i);
size_t sxv_utf8_count(const char *s, size_t len);
int sxv_utf8_valid(const char *s, size_t len);
void sxv_utf8_put(sxv_buf *b, unsigned long cp);

/* ---- URIs (val_uri.c) ----------------------------------------------------- */

/* RFC 3986 section 5.2 reference resolution; *out is malloc'd. */
int sxv_uri_resolve(const char *base, const char *ref, char **out);
/* Percent-decodes s[0..n) into b; 0 on success, -1 on a bad escape. */
int sxv_pct_decode(sxv_buf *b, const char *s, size_t n);

/* ---- JSON values (val_json.c) -------------------------------------------- */

/* Numbers: `t` holds the text of the instance's numbers read by
 * sx_numjson (NULL: none); where a number has text the comparison is exact
 * decimal arithmetic on it (common/sx_numjson.h), else on jansson's value. */
int sxv_json_equal(const sx_numtab *t, const json_t *a, const json_t *b); /* numbers by value */
uint64_t sxv_json_hash(const json_t *a);
int sxv_json_depth_ok(const json_t *a, unsigned limit);
int sxv_num_cmp(const sx_numtab *t, const json_t *a, const json_t *b); /* -1, 0, 1 */
int sxv_num_is_integer(const sx_numtab *t, const json_t *a);
int sxv_num_multiple_of(const sx_numtab *t, const json_t *x, const json_t *m);
void sxv_num_str(const sx_numtab *t, const json_t *a, char *out, size_t cap);

/* ---- regular expressions (val_regex.c) ------------------------------------ */

/* Translates an ECMA-262 pattern to PCRE2 syntax with the same meaning
 * under PCRE2_UTF (no UCP).  Errors: SX_EFORMAT (not ECMA-262),
 * SX_EUNSUPPORTED (ECMA-262 that PCRE2 cannot match the same way). */
int sxv_regex_translate(const char *src, size_t len, sxv_buf *out,
                        sx_error *err);
/* Translate + pcre2_compile (+ JIT where available). */
int sxv_regex_compile(const char *src, size_t len, pcre2_code **out,
                      sx_error *err);
/* 1 if the pattern matches somewhere in s, 0 if not, -code on error. */
int sxv_regex_search(const pcre2_code *re, const char *s, size_t len,
                     pcre2_match_data *md, pcre2_match_context *mc);

/* The translator's state, shared by val_regex.c (structure: groups,
 * quantifiers, alternatives) and val_regex_class.c (characters, escapes,
 * classes, properties).  Every function returns 0 or -1 with the error
 * recorded once in `failed`/`err`. */
typedef struct sxv_rx {
    const char *s;
    size_t n, i;
    sxv_buf *out;
    sx_error *err;
    int failed;
    unsigned ngroups;  /* total, from the pre-scan */
    unsigned gseen;    /* groups opened so far */
    char **names;      /* names[g] for named group g, else NULL */
    unsigned char *repeated; /* group g sits inside a repeated group */
    unsigned *backrefs;
    size_t nbackrefs, capbackrefs;
    int plus_star;     /* write a single atom's `X+` as `XX*` (DFA form) */
} sxv_rx;

int sxv_rx_error(sxv_rx *r, int code, const char *what);
int sxv_rx_peek(const sxv_rx *r);
int sxv_rx_is_alnum(int c);
void sxv_rx_emit_cp(sxv_buf *o, unsigned long cp);
long sxv_rx_char_escape(sxv_rx *r, int in_class);
struct sxv_cset;
int sxv_rx_property(sxv_rx *r, int neg, struct sxv_cset *c);
int sxv_rx_class_escape(sxv_rx *r, int e);
int sxv_rx_parse_class(sxv_rx *r);

/* ---- formats (val_format*.c) ---------------------------------------------- */

int sxv_format_id(const char *name); /* 0: unknown */
const char *sxv_format_name(int id);
int sxv_format_check(int id, const char *s, size_t len); /* 1 ok, 0 not */

int sxv_fmt_date(const char *s, size_t n);
int sxv_fmt_time(const char *s, size_t n);
int sxv_fmt_date_time(const char *s, size_t n);
int sxv_fmt_duration(const char *s, size_t n);
int sxv_fmt_ipv4(const char *s, size_t n);
int sxv_fmt_ipv6(const char *s, size_t n);
int sxv_fmt_hostname(const char *s, size_t n);
int sxv_fmt_idn_hostname(const char *s, size_t n);
int sxv_fmt_email(const char *s, size_t n, int idn);
int sxv_fmt_uri(const char *s, size_t n, int iri, int ref);
int sxv_fmt_uri_template(const char *s, size_t n);
int sxv_punycode_decode(const char *s, size_t n, unsigned long *out,
                        size_t cap, size_t *outn);
int sxv_punycode_encode(const unsigned long *cp, size_t n, char *out,
                        size_t cap, size_t *outn);

/* ---- compiled schemas ------------------------------------------------------ */

enum {
    SXV_D4 = 1, /* draft-04: `id`, boolean exclusive bounds, 1.0 is no
                   integer, no const/contains/propertyNames */
    SXV_D6,     /* draft-06: no if/then/else */
    SXV_D7,
    SXV_D2019,
    SXV_D2020,
};

enum {
    SXV_V_CORE = 1u << 0,
    SXV_V_APPLICATOR = 1u << 1,
    SXV_V_UNEVALUATED = 1u << 2,
    SXV_V_VALIDATION = 1u << 3,
    SXV_V_FORMAT = 1u << 4,        /* format is a keyword at all */
    SXV_V_FORMAT_ASSERT = 1u << 5, /* ... and it asserts */
    SXV_V_ALL = 0x1fu,
};

enum {
    SXV_T_NULL = 1u << 0,
    SXV_T_BOOLEAN = 1u << 1,
    SXV_T_OBJECT = 1u << 2,
    SXV_T_ARRAY = 1u << 3,
    SXV_T_NUMBER = 1u << 4,
    SXV_T_STRING = 1u << 5,
    SXV_T_INTEGER = 1u << 6,
};

typedef struct sxv_node sxv_node;
typedef struct sxv_res sxv_res;
typedef struct sxv_doc sxv_doc;

typedef struct sxv_doc {
    json_t *root;      /* owned deep copy */
    const char *uri;   /* retrieval URI */
    sxv_doc *next;
} sxv_doc;

typedef struct sxv_anchor {
    const char *name;
    const json_t *json;
    sxv_node *node;    /* compiled lazily; set for every dynamic anchor */
    int dynamic;
    int ambiguous;     /* the name is defined twice in the resource */
    struct sxv_anchor *next;
} sxv_anchor;

/* A schema resource: a document root or a subschema with $id.  The
 * dynamic scope of $dynamicRef is a stack of these. */
struct sxv_res {
    const char *uri;   /* absolute, no fragment */
    const json_t *json;
    const sxv_doc *doc;
    const char *ptr;   /* of its root in doc */
    sxv_anchor *anchors;
    sxv_res *next;     /* all resources of a validator */
    int used;          /* some node of it was compiled */
};

typedef struct sxv_str {
    const char *s;
    size_t n;
} sxv_str;

typedef struct sxv_prop {
    sxv_str name;
    sxv_node *node;
} sxv_prop;

typedef struct sxv_pprop {
    const char *src;
    pcre2_code *re;
    sxv_node *node;
} sxv_pprop;

typedef struct sxv_dreq {
    sxv_str name;
    sxv_str *req;
    size_t nreq;
    const char *kw; /* "dependentRequired" or "dependencies" */
} sxv_dreq;

typedef struct sxv_dsch {
    sxv_str name;
    sxv_node *node;
    const char *kw; /* "dependentSchemas" or "dependencies" */
} sxv_dsch;

struct sxv_node {
    const char *ptr;    /* JSON Pointer of this schema in its document */
    const sxv_doc *doc;
    const sxv_res *res;
    signed char boolean; /* -1 object schema, 0 false, 1 true */
    unsigned char need_ann;     /* has unevaluatedItems/Properties */
    unsigned char format_assert;
    unsigned char unique;
    unsigned char xmin_bool, xmax_bool; /* draft-04 style exclusives */
    unsigned char int_strict;   /* draft-04: only integer literals */

    unsigned types;     /* SXV_T_*, 0 = no type keyword */
    const json_t *enum_, *const_;
    const json_t *minimum, *maximum, *xminimum, *xmaximum, *multiple_of;
    size_t min_len, max_len;
    const char *pattern_src;
    pcre2_code *pattern;
    int format;

    sxv_node **prefix;
    size_t nprefix;
    const char *prefix_kw;     /* "prefixItems" or "items" */
    sxv_node *items;           /* applies past the prefix */
    const char *items_kw;      /* "items" or "additionalItems" */
    sxv_node *contains;
    size_t min_contains, max_contains;
    size_t min_items, max_items;
    sxv_node *uneval_items;

    sxv_prop *props;           /* sorted by name */
    size_t nprops;
    sxv_pprop *pprops;
    size_t npprops;
    sxv_node *addl;
    sxv_node *prop_names;
    size_t min_props, max_props;
    sxv_str *required;
    size_t nrequired;
    sxv_dreq *dep_req;
    size_t ndep_req;
    sxv_dsch *dep_sch;
    size_t ndep_sch;
    sxv_node *uneval_props;

    sxv_node **all_of, **any_of, **one_of;
    size_t nall_of, nany_of, none_of;
    sxv_node *not_, *if_, *then_, *else_;
    sxv_node *ref;
    const char *ref_src;
    sxv_node *dynref;          /* initial target */
    const char *dyn_name;      /* non-NULL: resolve dynamically */
    const char *dynref_src;
};

typedef struct sxv_regex_ent {
    pcre2_code *code;
    struct sxv_regex_ent *next;
} sxv_regex_ent;

struct sx_validator {
    sxv_arena arena;
    sxv_node *root;
    sxv_doc *docs;
    const sxv_doc *docs_root; /* the document the caller passed */
    sxv_res *resources;
    sxv_regex_ent *regexes;
    pcre2_match_context *mctx;
    unsigned long match_limit;
    unsigned max_depth;
};

/* Builds v->root from `schema`, which it takes over (val_load.c). */
int sxv_build(sx_validator *v, json_t *schema, const sx_val_opts *opts,
              sx_error *err);

/* ---- compilation state (val_load.c, val_compile.c) ------------------------- */

/* Where a schema object sits: its resource, JSON Pointer and dialect. */
typedef struct sxv_loc {
    const sxv_res *res;
    const char *ptr;
    int dialect;
    unsigned vocab;
    sxv_node *node; /* once compiled */
} sxv_loc;

typedef struct sxv_pending {
    sxv_node *node;
    const char *uri;  /* absolute target */
    const char *src;  /* as written */
    int dynamic;
    int dialect;      /* of the referrer: a remote document without
                         $schema is read in it */
    struct sxv_pending *next;
} sxv_pending;

typedef struct sxv_comp {
    sx_validator *v;
    const sx_val_opts *opts;
    sx_error *err;
    sxv_map locs;     /* json_t * -> sxv_loc * */
    sxv_map uris;     /* resource URI -> sxv_res * */
    sxv_pending *pending;
    sxv_res ambiguous; /* marks a URI that several resources claim */
    unsigned ndocs;
    unsigned max_json_depth;
} sxv_comp;

/* The node for schema value s (object or boolean), compiling it on first
 * use; res/ptr/dialect/vocab place it when it was not met while walking
 * its document. */
int sxv_node_for(sxv_comp *c, const json_t *s, const sxv_res *res,
                 const char *ptr, int dialect, unsigned vocab,
                 sxv_node **out);
/* Queues a $ref / $dynamicRef of node n, written `ref` in location loc. */
int sxv_add_ref(sxv_comp *c, sxv_node *n, const sxv_loc *loc,
                const char *ref, int dynamic);
/* Walks schema object s (and its subschemas) once, recording locations and
 * registering $id/$anchor/$dynamicAnchor (val_load.c). */
int sxv_walk(sxv_comp *c, const json_t *s, sxv_res *res, const char *ptr,
             int dialect, unsigned vocab, unsigned depth);
/* Loads a remote document through the caller's resolver (val_load.c). */
int sxv_fetch(sxv_comp *c, const char *uri, int dialect, sxv_res **out);
/* Resolves queued references until none is left (val_ref.c). */
int sxv_drain(sxv_comp *c);
/* Fills node n from the keywords of schema object s (val_compile.c). */
int sxv_compile_node(sxv_comp *c, sxv_node *n, const json_t *s,
                     const sxv_loc *loc);
/* A keyword error at loc: SX_EFORMAT unless code says otherwise. */
int sxv_kw_error(sxv_comp *c, const sxv_loc *loc, const char *kw, int code,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Keeps a compiled regex for freeing with the validator. */
int sxv_keep_regex(sx_validator *v, pcre2_code *re);

/* ---- evaluation (val_eval*.c) ---------------------------------------------- */

/* Which instance items/properties in-place subschemas evaluated, for
 * unevaluatedItems/unevaluatedProperties: seen[i] for the i-th array item,
 * or the i-th property in the object's iteration order. */
typedef struct sxv_ann {
    unsigned char *seen;
    size_t n;
} sxv_ann;

typedef struct sxv_seg {
    const char *key; /* NULL: array index */
    size_t len;      /* key length or index */
} sxv_seg;

typedef struct sxv_ref_frame {
    const sxv_node *node;
    const json_t *inst;
} sxv_ref_frame;

typedef struct sxv_ctx {
    const sx_validator *v;
    sx_error *why;
    int why_set;
    int quiet;            /* >0 inside a branch whose failure is expected */
    int err;              /* hard error code, SX_OK while none */
    unsigned depth;
    sxv_seg *path;        /* instance location, max_depth + 1 deep */
    size_t npath;
    const sxv_res **scope;
    size_t nscope;
    sxv_ref_frame *refs;
    size_t nrefs;
    pcre2_match_data *md;
    pcre2_match_context *mc_long; /* this call's, for long subjects */
    const sx_numtab *nums;        /* the instance's number text, or NULL */
} sxv_ctx;

enum { SXV_INVALID = 0, SXV_VALID = 1, SXV_ERROR = -1 };

/* Evaluates node against instance x; returns SXV_VALID, SXV_INVALID or
 * SXV_ERROR (c->err set).  ann, when non-NULL, receives the evaluated
 * items/properties of x (only meaningful if the result is VALID). */
int sxv_eval(sxv_ctx *c, const sxv_node *n, const json_t *x, sxv_ann *ann);

/* Records the first reportable failure; returns SXV_INVALID. */
int sxv_fail(sxv_ctx *c, const sxv_node *n, const char *kw,
             const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Records a hard error; returns SXV_ERROR. */
int sxv_hard(sxv_ctx *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A regex search within this call's budget: 1, 0, or -code. */
int sxv_match(sxv_ctx *c, const pcre2_code *re, const char *s, size_t len);

int sxv_path_push_key(sxv_ctx *c, const char *key, size_t len);
int sxv_path_push_index(sxv_ctx *c, size_t i);
void sxv_path_pop(sxv_ctx *c);

int sxv_ann_init(sxv_ctx *c, sxv_ann *a, size_t n);
void sxv_ann_merge(sxv_ann *into, const sxv_ann *from);
void sxv_ann_free(sxv_ann *a);

/* Keyword families (val_kw_*.c); each returns like sxv_eval. */
int sxv_kw_scalar(sxv_ctx *c, const sxv_node *n, const json_t *x);
int sxv_kw_array(sxv_ctx *c, const sxv_node *n, const json_t *x,
                 sxv_ann *ann);
int sxv_kw_object(sxv_ctx *c, const sxv_node *n, const json_t *x,
                  sxv_ann *ann);
/* unevaluatedItems / unevaluatedProperties, after every other keyword. */
int sxv_kw_array_uneval(sxv_ctx *c, const sxv_node *n, const json_t *x,
                        sxv_ann *ann);
int sxv_kw_object_uneval(sxv_ctx *c, const sxv_node *n, const json_t *x,
                         sxv_ann *ann);

const char *sxv_type_name(const sx_numtab *t, const json_t *x);

#endif
