/* cachepin: the kubelet's plugin registration service (grpc_kubelet.h). */
#include "grpc_kubelet.h"

#include "grpc_dra.h"
#include "grpc_reply.h"
#include "log.h"
#include "pluginregistration_v1.pb-c.h"

static void
get_info (void *ctx, const uint8_t *req, size_t n, struct cp_grpc_reply *reply)
{
  struct cp_grpc_kubelet *k = ctx;
  ProtobufCMessage *in = cp_grpc_unpack (&pluginregistration__info_request__descriptor, req, n, "GetInfo", reply);
  if (in == NULL)
    return;
  protobuf_c_message_free_unpacked (in, NULL);
  static char *versions[] = CP_GRPC_DRA_VERSIONS;
  Pluginregistration__PluginInfo info = PLUGINREGISTRATION__PLUGIN_INFO__INIT;
  info.type = (char *) CP_GRPC_KUBELET_TYPE;
  info.name = (char *) CP_GRPC_KUBELET_NAME;
  info.endpoint = (char *) k->endpoint;
  info.n_supported_versions = sizeof versions / sizeof versions[0];
  info.supported_versions = versions;
  cp_log (CP_LOG_INFO, "grpc: GetInfo: %s %s at %s", info.type, info.name, info.endpoint);
  cp_grpc_reply_pack (reply, &info.base);
}

static void
notify (void *ctx, const uint8_t *req, size_t n, struct cp_grpc_reply *reply)
{
  struct cp_grpc_kubelet *k = ctx;
  Pluginregistration__RegistrationStatus *st = (Pluginregistration__RegistrationStatus *) cp_grpc_unpack (
    &pluginregistration__registration_status__descriptor, req, n, "NotifyRegistrationStatus", reply);
  if (st == NULL)
    return;
  if (st->plugin_registered)
    cp_log (CP_LOG_INFO, "grpc: the kubelet registered the plugin");
  else
    cp_log (CP_LOG_WARNING, "grpc: the kubelet did not register the plugin: %.200s", st->error);
  if (k->notified)
    k->notified (k->ctx, st->plugin_registered, st->error);
  protobuf_c_message_free_unpacked (&st->base, NULL);
  Pluginregistration__RegistrationStatusResponse out = PLUGINREGISTRATION__REGISTRATION_STATUS_RESPONSE__INIT;
  cp_grpc_reply_pack (reply, &out.base);
}

const struct cp_grpc_method *
cp_grpc_kubelet_methods (struct cp_grpc_kubelet *k, size_t *n)
{
  k->methods[0] = (struct cp_grpc_method) { .path = CP_GRPC_KUBELET_GET_INFO, .call = get_info, .ctx = k };
  k->methods[1] = (struct cp_grpc_method) { .path = CP_GRPC_KUBELET_NOTIFY, .call = notify, .ctx = k };
  *n = 2;
  return k->methods;
}
