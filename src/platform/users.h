// The user name of a uid, from the system's user database (getpwuid_r: /etc/passwd, LDAP or sssd through
// NSS). Callers cache the answers: a lookup through NSS can be slow.
//
// Thread-safety: any thread.
#pragma once

#include <cstdint>
#include <string>

namespace gpuscope {

// The name of `uid`; empty when the database has none (or the lookup failed).
std::string UserNameOf(uint32_t uid);

}  // namespace gpuscope
