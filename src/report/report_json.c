/* report_json.c: not written yet */
