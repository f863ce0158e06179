/*
 * 16550 UART on COM1 (0x3f8): the serial console.  Output is polled so that
 * panic can always print; input raises IRQ 4 (tty.c takes the bytes).
 */
#include "types.h"
#include "x86.h"
#include "uart.h"

#define COM1 0x3f8
#define RBR 0   /* receive buffer (read) */
#define THR 0   /* transmit holding (write) */
#define IER 1
#define FCR 2
#define LCR 3
#define MCR 4
#define LSR 5
#define LSR_DR   0x01
#define LSR_THRE 0x20

static bool uart_present;

void uart_init(void)
{
	outb(COM1 + IER, 0x00);
	outb(COM1 + LCR, 0x80);     /* DLAB: set divisor */
	outb(COM1 + 0, 1);          /* 115200 baud */
	outb(COM1 + 1, 0);
	outb(COM1 + LCR, 0x03);     /* 8N1 */
	outb(COM1 + FCR, 0xc7);     /* FIFO on, cleared, 14-byte threshold */
	outb(COM1 + MCR, 0x0b);     /* DTR, RTS, OUT2 */
	uart_present = inb(COM1 + LSR) != 0xff;
}

void uart_putc(char c)
{
	if (!uart_present)
		return;
	for (int i = 0; i < 100000 && !(inb(COM1 + LSR) & LSR_THRE); i++)
		__asm__ __volatile__("pause");
	outb(COM1 + THR, (uint8_t)c);
}

void uart_enable_rx_intr(void)
{
	if (uart_present)
		outb(COM1 + IER, 0x01);     /* received data available */
}

void uart_disable_rx_intr(void)
{
	if (uart_present)
		outb(COM1 + IER, 0x00);
}

int uart_getc(void)
{
	if (!uart_present || !(inb(COM1 + LSR) & LSR_DR))
		return -1;
	return inb(COM1 + RBR);
}
