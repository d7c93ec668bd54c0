#include "gateway/auth/tenant_scope.hpp"

#include "core/api_error.hpp"

namespace agw::gateway::auth {

void stamp_tenant(boost::json::value& body, const std::string& tenant) {
  if (body.is_null()) body = boost::json::object{};
  auto* object = body.if_object();
  if (!object) return;
  auto& scopes = (*object)["scopes"];
  if (scopes.is_null()) scopes = boost::json::object{};
  auto* map = scopes.if_object();
  if (!map) return;
  if (auto* given = map->if_contains("tenant"); given && !(given->is_string() && given->as_string() == tenant))
    throw core::api_error(core::error_code::bad_request, "scopes.tenant must be the tenant of your API key");
  (*map)["tenant"] = tenant;
}

void restrict_to_tenant(core::session_filter& filter, const std::string& tenant) { filter.scopes.emplace_back("tenant", tenant); }

}  // namespace agw::gateway::auth
