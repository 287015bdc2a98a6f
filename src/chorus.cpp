// libchorus: the one translation unit that compiles chorus's non-template entry points for
// compiled mode (CHORUS_COMPILED_LIB, see include/chorus/core/config.hpp). Programs that define
// CHORUS_COMPILED_LIB see declarations only and link this library instead of compiling the
// bodies in every translation unit.
#ifndef CHORUS_COMPILED_LIB
#error "build libchorus with -DCHORUS_COMPILED_LIB (meson.build does)"
#endif
#define CHORUS_BUILDING_LIB 1

#include <chorus/chorus.hpp>
