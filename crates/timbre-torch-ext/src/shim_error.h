// What shim.cpp and cuda_graph.cpp share: errors cross the C ABI as malloc'd strings (NULL on
// success), freed by the caller with timbre_ext_free_error.
#pragma once

#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

static char *error_text(const std::string &message) {
  char *text = static_cast<char *>(std::malloc(message.size() + 1));
  if (text != nullptr) std::memcpy(text, message.c_str(), message.size() + 1);
  return text;
}

#define GUARDED(body)                                      \
  try {                                                    \
    body;                                                  \
    return nullptr;                                        \
  } catch (const std::exception &e) {                      \
    return error_text(e.what());                           \
  } catch (...) {                                          \
    return error_text("unknown C++ exception in libtorch"); \
  }
