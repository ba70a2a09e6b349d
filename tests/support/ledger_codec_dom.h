/* cachepin: the ledger's reference codec, over json-c's DOM (tests, fuzzer and
 * bench only: the hook uses ledger_codec.h's).  It reads and writes the format
 * ledger_codec.h documents and keeps the same promises, with the same messages
 * for the same single fault; its output is json-c's pretty-printed text. */
#ifndef CP_LEDGER_CODEC_DOM_H
#define CP_LEDGER_CODEC_DOM_H

#include "ledger.h"

int cp_ledger_parse_dom (const char *buf, size_t len, struct cp_ledger **out, cp_error_t *err);
char *cp_ledger_serialize_dom (const struct cp_ledger *l);

#endif
