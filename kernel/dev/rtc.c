/*
 * The CMOS real-time clock (MC146818 compatible, ports 0x70/0x71): read once
 * at boot for the wall clock.  Only the boot CPU reads it, before the other
 * CPUs start, so it takes no lock.
 */
#include "kernel.h"
#include "timekeep.h"
#include "x86.h"

#define CMOS_ADDR 0x70
#define CMOS_DATA 0x71

static uint8_t cmos_read(uint8_t reg)
{
	outb(CMOS_ADDR, reg | 0x80);     /* bit 7: keep NMIs disabled */
	return inb(CMOS_DATA);
}

static bool update_in_progress(void)
{
	return cmos_read(0x0a) & 0x80;
}

struct rtc_time {
	uint8_t sec, min, hour, day, mon, year, century;
};

static void rtc_snapshot(struct rtc_time *t)
{
	for (int i = 0; i < 100000 && update_in_progress(); i++)
		;
	t->sec = cmos_read(0x00);
	t->min = cmos_read(0x02);
	t->hour = cmos_read(0x04);
	t->day = cmos_read(0x07);
	t->mon = cmos_read(0x08);
	t->year = cmos_read(0x09);
	t->century = cmos_read(0x32);
}

static unsigned bcd(uint8_t v)
{
	return (v & 0x0f) + (v >> 4) * 10;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

uint64_t rtc_read_epoch(void)
{
	struct rtc_time a, b;
	int tries = 0;
	rtc_snapshot(&b);
	do {                              /* two equal reads: no update in between */
		a = b;
		rtc_snapshot(&b);
	} while (memcmp(&a, &b, sizeof(a)) && ++tries < 10);
	uint8_t status_b = cmos_read(0x0b);
	bool binary = status_b & 0x04, h24 = status_b & 0x02;
	bool pm = a.hour & 0x80;
	a.hour &= 0x7f;
	unsigned sec = binary ? a.sec : bcd(a.sec), min = binary ? a.min : bcd(a.min);
	unsigned hour = binary ? a.hour : bcd(a.hour), day = binary ? a.day : bcd(a.day);
	unsigned mon = binary ? a.mon : bcd(a.mon), year = binary ? a.year : bcd(a.year);
	unsigned cent = binary ? a.century : bcd(a.century);
	if (!h24 && pm)
		hour = (hour % 12) + 12;
	else if (!h24 && hour == 12)
		hour = 0;
	year += (cent >= 19 && cent <= 30) ? cent * 100 : 2000;
	if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60)
		return 0;
	return (uint64_t)(days_from_civil(year, mon, day) * 86400 + hour * 3600 + min * 60 + sec);
}
