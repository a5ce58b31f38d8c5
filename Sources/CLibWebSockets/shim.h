// libwebsockets, imported only by SluiceWebSocket. The helpers below cover what Swift cannot import: the LWS_PRE
// macro, and a timer list entry that carries its owner (lws_container_of is a macro too).
#ifndef SLUICE_LWS_SHIM_H
#define SLUICE_LWS_SHIM_H

#include <libwebsockets.h>

static inline size_t sluice_lws_pre(void) { return LWS_PRE; }

/// A sul (timer) with a pointer back to its Swift owner; `sul` must stay the first member.
typedef struct sluice_lws_timer {
    lws_sorted_usec_list_t sul;
    void *owner;
} sluice_lws_timer;

static inline void *sluice_lws_timer_owner(lws_sorted_usec_list_t *sul) {
    return ((sluice_lws_timer *)sul)->owner;
}

#endif
