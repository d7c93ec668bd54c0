#include "core/webhooks/webhook_signature.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <stdexcept>

namespace agw::core {

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string webhook_signature(std::string_view key, std::string_view webhook_id, std::int64_t timestamp_s,
                              std::string_view body) {
  std::string content;
  content.reserve(webhook_id.size() + body.size() + 24);
  content.append(webhook_id).append(".").append(std::to_string(timestamp_s)).append(".").append(body);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(content.data()),
            content.size(), mac, &mac_len))
    throw std::runtime_error("HMAC-SHA256 failed");
  return "v1," + base64_encode(std::string_view(reinterpret_cast<const char*>(mac), mac_len));
}

}  // namespace agw::core
