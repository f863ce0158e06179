module concerto/go_net

go 1.19
