// The generated code (types, server, client; package access) comes from openapi.yaml through swift-openapi-generator
// (Support/generate-sync-api.sh, into Generated/), configured by openapi-generator-config.yaml.

/// The OpenAPI document this module is generated from, as served at `GET /openapi.yaml`.
package let openAPIDocument: [UInt8] = PackageResources.openapi_yaml
