/*
 * trace.c - what replay:'s two readers (trace_csv.c, trace_ptd_log.c)
 * share: the one list of replay:'s options and which file each is for,
 * cutting the text into lines, appending readings with the check every
 * trace passes (times increase), and calendar dates as seconds.
 */
#include "power_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct power_trace_option_info power_trace_option_list[EEB_TRACE_OPTIONS] = {
    [EEB_TRACE_TIME] = {"time", "COLUMN", 0},
    [EEB_TRACE_POWER] = {"power", "COLUMN", 0},
    [EEB_TRACE_VOLTS] = {"volts", "COLUMN", 0},
    [EEB_TRACE_AMPS] = {"amps", "COLUMN", 0},
    [EEB_TRACE_TIME_UNIT] = {"time_unit", "s|ms|us|ns", 0},
    [EEB_TRACE_DECIMAL] = {"decimal", ",|.", 0},
    [EEB_TRACE_CHANNEL] = {"channel", "N|total", 1},
    [EEB_TRACE_DATE] = {"date", "MM-DD|DD-MM", 1},
    [EEB_TRACE_MARK] = {"mark", "LABEL", 1},
};

int power_trace_options_for(const struct power_trace *t, const struct power_trace_options *o,
                            int ptd_log, char *err, size_t errlen)
{
    for (int i = 0; i < EEB_TRACE_OPTIONS; i++) {
        const struct power_trace_option_info *opt = &power_trace_option_list[i];
        if (!o->value[i] || opt->ptd_log == ptd_log)
            continue;
        if (ptd_log)
            return eeb_errf(err, errlen, EEB_EINVAL, "%s: %s= %s; this is a PTDaemon log", t->path,
                            opt->name, i <= EEB_TRACE_AMPS ? "names a CSV column" : "is for CSVs");
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: %s= is for PTDaemon logs; this is a CSV",
                        t->path, opt->name);
    }
    return EEB_OK;
}

char *power_trace_line(char **cursor)
{
    char *line = *cursor;
    if (!line)
        return NULL;
    char *end = strchr(line, '\n');
    *cursor = end ? end + 1 : NULL;
    if (end)
        *end = '\0';
    else if (!*line)
        return NULL; /* the text ended with its last line's LF */
    size_t len = strlen(line);
    if (len && line[len - 1] == '\r')
        line[len - 1] = '\0';
    return line;
}

int power_trace_add(struct power_trace *t, const struct power_trace_point *p, const char *time_text,
                    char *err, size_t errlen)
{
    if (t->n && !(p->t > t->p[t->n - 1].t))
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "%s:%d: time %s is not after line %d's (times must increase)", t->path,
                        p->line, time_text, t->last_line);
    if (t->n == t->cap) { /* grown with the readings, not sized by the lines: blank lines,
                             comments and messages cost nothing */
        size_t cap = t->cap ? 2 * t->cap : 256;
        void *grown = realloc(t->p, cap * sizeof *t->p);
        if (!grown)
            return eeb_errf(err, errlen, EEB_ENOMEM, "%s:%d: out of memory at %zu readings",
                            t->path, p->line, t->n);
        t->p = grown, t->cap = cap;
    }
    t->p[t->n++] = *p;
    t->last_line = p->line;
    return EEB_OK;
}

/* Days from 1970-01-01 to year-month-day (proleptic Gregorian): years
 * counted from March, so that the leap day ends a year. */
static int64_t days_from_epoch(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t year_of_era = y - era * 400;
    int64_t day_of_year = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    return era * 146097 + day_of_era - 719468;
}

int power_civil_seconds(int year, int month, int day, int hour, int min, int sec, int64_t *out)
{
    static const int month_days[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (year < 1 || year > 9999 || month < 1 || month > 12 || day < 1 ||
        day > month_days[month - 1] - (month == 2 && !leap) || hour < 0 || hour > 23 || min < 0 ||
        min > 59 || sec < 0 || sec > 60)
        return -1;
    *out = days_from_epoch(year, month, day) * 86400 + hour * 3600 + min * 60 + sec;
    return 0;
}

int power_trace_is_ptd_log(const char *text)
{
    text += strspn(text, " \t\r\n");
    int a, b, y, n = 0;
    return strncmp(text, "Time,", 5) == 0 &&
           sscanf(text + 5, "%2d-%2d-%4d%n", &a, &b, &y, &n) == 3 && n == 10;
}
