/* The --html row of trace-export's formats: the HTML report of the whole run. */
#include "export/export.h"
#include "export/html.h"

static tr_status write_html(sqlite3 *db, const tr_export_opts *o, FILE *out, tr_error *err)
{
    /* the report's tables are the whole run's; filtered ones are trace-analyze --report's */
    if (o->has_time_range || o->has_thread || o->has_device || o->include_re || o->exclude_re)
        return tr_fail(err, TR_ERR_USAGE, "--html takes no selection options (trace-analyze --report does)");
    return tr_html_report(db, o->title, &o->ranks, out, err);
}

const tr_export_format tr_export_html_format = {"html", write_html};
