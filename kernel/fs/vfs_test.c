#include "ktest.h"
