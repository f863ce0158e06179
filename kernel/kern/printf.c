/*
 * Kernel printf: a small vsnprintf (d i u x X p s c %, flags - 0, width,
 * precision for s, length l ll z h) and kprintf, which formats into a buffer
 * and writes it to the console under console_lock so lines from different
 * CPUs do not interleave.
 */
#include "kernel.h"
#include "lock.h"
#include "uart.h"

struct outbuf {
	char *buf;
	size_t size;
	size_t len;   /* characters produced, may exceed size */
};

static void put(struct outbuf *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void put_num(struct outbuf *o, uint64_t v, int base, bool neg, bool upper,
		    int width, bool zero, bool left)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = digits[v % base];
		v /= base;
	} while (v);
	int len = n + (neg ? 1 : 0);
	if (!left && !zero)
		for (; width > len; width--)
			put(o, ' ');
	if (neg)
		put(o, '-');
	if (!left && zero)
		for (; width > len; width--)
			put(o, '0');
	while (n)
		put(o, tmp[--n]);
	if (left)
		for (; width > len; width--)
			put(o, ' ');
}

int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct outbuf o = { buf, size, 0 };
	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			put(&o, *fmt);
			continue;
		}
		fmt++;
		bool left = false, zero = false;
		for (;; fmt++) {
			if (*fmt == '-') left = true;
			else if (*fmt == '0') zero = true;
			else break;
		}
		int width = 0, prec = -1;
		if (*fmt == '*') {
			width = va_arg(ap, int);
			fmt++;
		}
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		if (*fmt == '.') {
			fmt++;
			prec = 0;
			if (*fmt == '*') {
				prec = va_arg(ap, int);
				fmt++;
			}
			while (*fmt >= '0' && *fmt <= '9')
				prec = prec * 10 + (*fmt++ - '0');
		}
		int lng = 0;
		while (*fmt == 'l' || *fmt == 'z' || *fmt == 'h') {
			if (*fmt != 'h')
				lng = 1;
			fmt++;
		}
		switch (*fmt) {
		case 'd':
		case 'i': {
			int64_t v = lng ? va_arg(ap, int64_t) : va_arg(ap, int);
			put_num(&o, v < 0 ? -(uint64_t)v : (uint64_t)v, 10, v < 0, false, width, zero, left);
			break;
		}
		case 'u':
		case 'x':
		case 'X': {
			uint64_t v = lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned int);
			put_num(&o, v, *fmt == 'u' ? 10 : 16, false, *fmt == 'X', width, zero, left);
			break;
		}
		case 'p':
			put(&o, '0');
			put(&o, 'x');
			put_num(&o, (uint64_t)va_arg(ap, void *), 16, false, false, width, zero, left);
			break;
		case 's': {
			const char *s = va_arg(ap, const char *);
			if (!s)
				s = "(null)";
			int len = (int)strnlen(s, prec >= 0 ? (size_t)prec : (size_t)-1);
			if (!left)
				for (int w = width; w > len; w--)
					put(&o, ' ');
			for (int i = 0; i < len; i++)
				put(&o, s[i]);
			if (left)
				for (int w = width; w > len; w--)
					put(&o, ' ');
			break;
		}
		case 'c':
			put(&o, (char)va_arg(ap, int));
			break;
		case '%':
			put(&o, '%');
			break;
		case '\0':
			fmt--;
			break;
		default:
			put(&o, '%');
			put(&o, *fmt);
		}
	}
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return (int)o.len;
}

int ksnprintf(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = kvsnprintf(buf, n, fmt, ap);
	va_end(ap);
	return r;
}

/* Serialises console output; ignored once the system is panicking. */
static struct simple_lock console_lock = SIMPLE_LOCK_INIT(LC_CONSOLE);

static void console_write(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\n')
			uart_putc('\r');
		uart_putc(s[i]);
	}
}

/* Bytes as they are (the tty layer did the output processing), whole. */
void console_put_raw(const char *s, size_t n)
{
	uint64_t fl = disable_lock(&console_lock);
	for (size_t i = 0; i < n; i++)
		uart_putc(s[i]);
	unlock_enable(&console_lock, fl);
}

/* User output (write to the console): whole writes, not mixed with kernel lines. */
void console_write_raw(const char *s, size_t n)
{
	uint64_t fl = disable_lock(&console_lock);
	console_write(s, n);
	unlock_enable(&console_lock, fl);
}

int kvprintf(const char *fmt, va_list ap)
{
	char buf[512];
	int n = kvsnprintf(buf, sizeof(buf), fmt, ap);
	size_t len = MIN((size_t)n, sizeof(buf) - 1);
	if (panicking) {
		console_write(buf, len);
		klog_append(buf, len);
		return n;
	}
	uint64_t s = disable_lock(&console_lock);
	console_write(buf, len);
	klog_append(buf, len);             /* in the console's order */
	unlock_enable(&console_lock, s);
	return n;
}

int kprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = kvprintf(fmt, ap);
	va_end(ap);
	return r;
}
