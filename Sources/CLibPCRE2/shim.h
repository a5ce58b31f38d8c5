// PCRE2 for 8-bit (UTF-8) subjects, imported only by SluiceRegex. The width must be chosen before the header.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
