/* Qwen3's chat template (tokenizer_config.json, no tools, thinking off),
 * written out by hand: rendering to text and encoding to ids walk the same
 * code, which emits template structure (<|im_start|>, <|im_end|>, <think>,
 * </think>, <tool_response>, </tool_response>: all added tokens) as special
 * pieces and everything else as plain text. */
#include <string.h>

#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/tokenizer_internal.h"

typedef struct sink {
    sx_bytes *text;            /* render: everything goes here */
    const sx_tokenizer *tok;   /* encode: plain text collects in pend */
    sx_ids *ids;
    sx_bytes pend;
    sx_error *err;
} sink;

typedef struct span {
    const char *p;
    size_t n;
} span;

static int put(sink *k, const char *s, size_t n)
{
    if (sx_bytes_append(k->text ? k->text : &k->pend, s, n))
        return sx_err_set(k->err, SX_ENOMEM, "out of memory rendering the chat");
    return SX_OK;
}

static int puts_(sink *k, const char *s)
{
    return put(k, s, strlen(s));
}

static int flush(sink *k)
{
    int rc = SX_OK;
    if (k->pend.n)
        rc = sx_tok_encode(k->tok, k->pend.v, k->pend.n, 0, k->ids, k->err);
    k->pend.n = 0;
    return rc;
}

static int special(sink *k, const char *s)
{
    int rc;
    if (k->text)
        return puts_(k, s);
    if ((rc = flush(k)))
        return rc;
    int32_t id = sx_tok_find(k->tok, s, strlen(s));
    if (id < 0 || !sx_tok_is_added(k->tok, id))
        return sx_err_set(k->err, SX_ENOTFOUND, "the tokenizer has no added token %s", s);
    if (sx_ids_push(k->ids, id))
        return sx_err_set(k->err, SX_ENOMEM, "out of memory encoding the chat");
    return SX_OK;
}

static const char *find_first(span s, const char *needle)
{
    return memmem(s.p, s.n, needle, strlen(needle));
}

static const char *find_last(span s, const char *needle)
{
    const char *last = NULL, *at;
    size_t nl = strlen(needle);
    span rest = s;
    while ((at = memmem(rest.p, rest.n, needle, nl))) {
        last = at;
        rest.n -= (size_t)(at + 1 - rest.p);
        rest.p = at + 1;
    }
    return last;
}

static span lstrip_nl(span s)
{
    while (s.n && *s.p == '\n') {
        s.p++;
        s.n--;
    }
    return s;
}

static span rstrip_nl(span s)
{
    while (s.n && s.p[s.n - 1] == '\n')
        s.n--;
    return s;
}

static int starts_with(const char *s, const char *pre)
{
    return !strncmp(s, pre, strlen(pre));
}

static int ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !memcmp(s + n - m, suf, m);
}

static int is_role(const sx_chat_msg *m, const char *role)
{
    return !strcmp(m->role, role);
}

static int check(const sx_chat_msg *msgs, size_t n, sx_error *err)
{
    if (n == 0)
        return sx_err_set(err, SX_EINVAL, "a chat needs at least one message");
    for (size_t i = 0; i < n; i++) {
        const sx_chat_msg *m = &msgs[i];
        if (!m->role || !m->content)
            return sx_err_set(err, SX_EINVAL, "message %zu has no role or no content", i);
        if (!is_role(m, "system") && !is_role(m, "user") && !is_role(m, "assistant") &&
            !is_role(m, "tool"))
            return sx_err_set(err, SX_EINVAL,
                              "message %zu: unknown role \"%.40s\" (expected system, user, "
                              "assistant or tool)",
                              i, m->role);
        size_t len = strlen(m->content), bad = sx_utf8_check(m->content, len, NULL);
        if (bad < len)
            return sx_err_setp(err, SX_EUTF8, NULL, (long)bad,
                               "message %zu: content is not valid UTF-8 at byte offset %zu", i,
                               bad);
    }
    return SX_OK;
}

static int assistant(sink *k, const sx_chat_msg *msgs, size_t n, size_t i, size_t last_query)
{
    span content = {msgs[i].content, strlen(msgs[i].content)}, reasoning = {"", 0};
    const char *close = find_first(content, "</think>");
    int rc;
    if (close) {
        /* content.split('</think>')[-1].lstrip('\n') and
         * content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') */
        span before = rstrip_nl((span){content.p, (size_t)(close - content.p)});
        const char *open = find_last(before, "<think>");
        if (open)
            before = (span){open + 7, before.n - (size_t)(open + 7 - before.p)};
        reasoning = lstrip_nl(before);
        const char *last = find_last(content, "</think>") + 8;
        content = lstrip_nl((span){last, content.n - (size_t)(last - content.p)});
    }
    if ((rc = special(k, "<|im_start|>")) || (rc = puts_(k, "assistant\n")))
        return rc;
    if (i > last_query && (i == n - 1 || reasoning.n)) {
        reasoning = rstrip_nl(lstrip_nl(reasoning));
        content = lstrip_nl(content);
        if ((rc = special(k, "<think>")) || (rc = puts_(k, "\n")) ||
            (rc = put(k, reasoning.p, reasoning.n)) || (rc = puts_(k, "\n")) ||
            (rc = special(k, "</think>")) || (rc = puts_(k, "\n\n")))
            return rc;
    }
    if ((rc = put(k, content.p, content.n)) || (rc = special(k, "<|im_end|>")) ||
        (rc = puts_(k, "\n")))
        return rc;
    return SX_OK;
}

static int render(const sx_chat_msg *m, size_t n, int gen, sink *k)
{
    int rc;
    if ((rc = check(m, n, k->err)))
        return rc;
    if (is_role(&m[0], "system") &&
        ((rc = special(k, "<|im_start|>")) || (rc = puts_(k, "system\n")) ||
         (rc = puts_(k, m[0].content)) || (rc = special(k, "<|im_end|>")) || (rc = puts_(k, "\n"))))
        return rc;
    /* the last user turn that is not a wrapped tool response */
    size_t last_query = n - 1;
    for (size_t j = n; j-- > 0;)
        if (is_role(&m[j], "user") && !(starts_with(m[j].content, "<tool_response>") &&
                                         ends_with(m[j].content, "</tool_response>"))) {
            last_query = j;
            break;
        }
    for (size_t i = 0; i < n; i++) {
        if (is_role(&m[i], "user") || (is_role(&m[i], "system") && i > 0)) {
            if ((rc = special(k, "<|im_start|>")) || (rc = puts_(k, m[i].role)) ||
                (rc = puts_(k, "\n")) || (rc = puts_(k, m[i].content)) ||
                (rc = special(k, "<|im_end|>")) || (rc = puts_(k, "\n")))
                return rc;
        } else if (is_role(&m[i], "assistant")) {
            if ((rc = assistant(k, m, n, i, last_query)))
                return rc;
        } else if (is_role(&m[i], "tool")) {
            /* consecutive tool results share one user turn */
            if ((i == 0 || !is_role(&m[i - 1], "tool")) &&
                ((rc = special(k, "<|im_start|>")) || (rc = puts_(k, "user"))))
                return rc;
            if ((rc = puts_(k, "\n")) || (rc = special(k, "<tool_response>")) ||
                (rc = puts_(k, "\n")) || (rc = puts_(k, m[i].content)) || (rc = puts_(k, "\n")) ||
                (rc = special(k, "</tool_response>")))
                return rc;
            if ((i == n - 1 || !is_role(&m[i + 1], "tool")) &&
                ((rc = special(k, "<|im_end|>")) || (rc = puts_(k, "\n"))))
                return rc;
        }
    }
    if (gen && ((rc = special(k, "<|im_start|>")) || (rc = puts_(k, "assistant\n")) ||
                (rc = special(k, "<think>")) || (rc = puts_(k, "\n\n")) ||
                (rc = special(k, "</think>")) || (rc = puts_(k, "\n\n"))))
        return rc;
    return k->text ? SX_OK : flush(k);
}

int sx_chat_render(const sx_chat_msg *msgs, size_t n, int add_generation_prompt, sx_bytes *out,
                   sx_error *err)
{
    sink k = {.text = out, .err = err};
    size_t start = out->n;
    int rc = render(msgs, n, add_generation_prompt, &k);
    if (rc) {
        out->n = start;
        if (out->v)
            out->v[start] = '\0';
    }
    return rc;
}

int sx_chat_encode(const sx_tokenizer *tok, const sx_chat_msg *msgs, size_t n,
                   int add_generation_prompt, sx_ids *out, sx_error *err)
{
    sink k = {.tok = tok, .ids = out, .err = err};
    size_t start = out->n;
    int rc = render(msgs, n, add_generation_prompt, &k);
    sx_bytes_free(&k.pend);
    if (rc)
        out->n = start;
    return rc;
}
