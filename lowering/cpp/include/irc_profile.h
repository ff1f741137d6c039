// Profiling build: wall time per kernel, summed over calls. The emitter defines IRC_PROFILE_KERNELS
// (the number of kernels, at least 1) and IRC_PROFILE_LABELS (their labels, as string literals).
#include <time.h>
static double irc_prof_ns[IRC_PROFILE_KERNELS];
static const char* irc_prof_labels[IRC_PROFILE_KERNELS] = {IRC_PROFILE_LABELS};
static inline double irc_now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
extern "C" int irc_profile_count() { return sizeof(irc_prof_ns) / sizeof(irc_prof_ns[0]); }
extern "C" const char* irc_profile_label(int i) { return irc_prof_labels[i]; }
extern "C" double irc_profile_ns(int i) { return irc_prof_ns[i]; }
extern "C" void irc_profile_reset() { for (double& t : irc_prof_ns) t = 0; }
