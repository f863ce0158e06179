/* POSIX message queues: to come. */
