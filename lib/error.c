#include "lib/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

tr_status tr_fail(tr_error *err, tr_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}

tr_status tr_error_prefix(tr_error *err, const char *fmt, ...)
{
    if (!err)
        return TR_ERR_RUNTIME;
    char prefix[512];
    char old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    size_t pl = strlen(prefix);
    if (pl >= sizeof err->msg)
        pl = sizeof err->msg - 1;
    memcpy(err->msg, prefix, pl);
    size_t ol = strnlen(old, sizeof err->msg - 1 - pl);
    memcpy(err->msg + pl, old, ol);
    err->msg[pl + ol] = '\0';
    return err->status;
}

void tr_error_clear(tr_error *err)
{
    if (err) {
        err->status = TR_OK;
        err->msg[0] = '\0';
    }
}

tr_status tr_error_copy(tr_error *err, const tr_error *from)
{
    if (err)
        *err = *from;
    return from->status;
}
