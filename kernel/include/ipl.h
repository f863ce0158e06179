/*
 * Interrupt priority levels (the seeds' SPL).  A lock class names the lowest
 * level at which its locks may be taken (L5).  On x86_64 Concerto masks
 * interrupts all at once (RFLAGS.IF): the current level is IPL_NONE with
 * interrupts enabled in thread context, the handler's level inside an
 * interrupt handler, and IPL_HIGH with interrupts disabled.  A class whose
 * minimum is above IPL_NONE must therefore be taken with interrupts disabled
 * (disable_lock) or from an interrupt handler.
 */
#ifndef CONCERTO_IPL_H
#define CONCERTO_IPL_H

#define IPL_NONE    0   /* thread level, all interrupts enabled */
#define IPL_SOFT    1   /* deferred work (reserved) */
#define IPL_DEVICE  2   /* device interrupt handlers (I/O APIC) */
#define IPL_CLOCK   3   /* local APIC timer */
#define IPL_IPI     4   /* inter-processor interrupts */
#define IPL_HIGH    5   /* everything masked */

int ipl_current(void);
const char *ipl_name(int ipl);

#endif
