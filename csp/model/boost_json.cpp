// Boost.JSON's definitions, compiled once here from its headers, so the
// build needs no Boost.JSON binary package.
#include <boost/json/src.hpp>
