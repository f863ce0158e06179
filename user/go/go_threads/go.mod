module concerto/go_threads

go 1.19
