// A decorator that confines a store to the keys under a prefix: key k maps
// to prefix + k in the inner store, listings strip the prefix again. Used for
// s3://bucket/prefix and for file/mem stores opened with ?prefix=.
// Thread-safe if the inner store is.
#pragma once

#include <string>

#include "object/object_store.h"

namespace strata::object {

// Owns `inner`. An empty prefix returns `inner` itself. The prefix is taken
// literally (no '/' is added).
ObjectStorePtr MakePrefixStore(ObjectStorePtr inner, std::string prefix);

}  // namespace strata::object
