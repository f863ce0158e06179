/* Historical name: the lock package lives in lock.h. */
#include "lock.h"
