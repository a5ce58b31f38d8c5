// libyaml's event parser, imported only by SluiceYAML.
#include <yaml.h>
