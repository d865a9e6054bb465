/* sx_text: tiny character helpers shared by the parsers. */
#ifndef SX_TEXT_H
#define SX_TEXT_H

/* Value of a hexadecimal digit, or -1. */
static inline int sx_hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

#endif
