#ifndef CONCERTO_UART_H
#define CONCERTO_UART_H
void uart_init(void);
void uart_putc(char c);
int uart_getc(void);   /* -1 if no byte is waiting */
void uart_enable_rx_intr(void);   /* interrupt when a byte arrives (IRQ 4) */
void uart_disable_rx_intr(void);  /* ... no more: flow control */
#endif
