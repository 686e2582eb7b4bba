// The exception serialize() throws for a record JSON Lines cannot represent.
#pragma once

#include <stdexcept>

namespace jsonlw {

// Thrown from serialize() (or by JsonLine for a non-finite number): the record is dropped
// alone, counted in dropped.malformed, and logged as "Dropped malformed <subject> record: <what>".
class MalformedRecord : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace jsonlw
