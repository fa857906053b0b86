// The Kubernetes API's schemas for KubernetesManifestsTest: reads a JSON array of objects on stdin
// and prints, for each, the list of its problems (an empty list when it fits) as one JSON array.
//
// The schemas are kubernetes-models' (package.json), generated from Kubernetes' own OpenAPI
// documents: the `required` lists, the enums (imagePullPolicy, restartPolicy, protocol, ...), the
// types and the formats, quantities among them. What the OpenAPI documents do not say is checked in
// the test itself (unknown fields, the API server's own validation rules).
import { formats } from "@kubernetes-models/validate";

// A quantity by Kubernetes' grammar, as Quantity's own documentation in the OpenAPI documents
// gives it:
//   <quantity>        ::= <signedNumber><suffix>
//   <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
//   <signedNumber>    ::= <number> | <sign><number>
//   <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
//   <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
//   <decimalSI>       ::= m | "" | k | M | G | T | P | E
//   <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>
// plus n and u, which the API server's parser (apimachinery's resource/suffix.go) takes too.
// kubernetes-models' own pattern is looser (it takes every SI prefix: "1h", "1da"), so it is
// replaced here; the generated validators read it at each call.
const NUMBER = "[+-]?(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)";
const QUANTITY = new RegExp(`^${NUMBER}(?:[KMGTPE]i|[eE]${NUMBER}|[numkMGTPE])?$`);
formats.quantity.validate = QUANTITY;

/** kind "apps/v1/Deployment" → its model, or null when kubernetes-models has none. */
async function model(apiVersion, kind) {
  if (!/^[a-z0-9.]*\/?v[0-9a-z]+$/.test(apiVersion) || !/^[A-Za-z0-9]+$/.test(kind)) {
    return null;
  }
  try {
    const module = await import(`kubernetes-models/${apiVersion}/${kind}`);
    return module[kind] ?? null;
  } catch {
    return null;
  }
}

/** /spec/template/spec/containers/0/image → spec.template.spec.containers[0].image */
function fieldPath(pointer) {
  return pointer.split("/").slice(1).map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce((path, p) => (/^[0-9]+$/.test(p) ? `${path}[${p}]` : path ? `${path}.${p}` : p), "");
}

function describe(error) {
  const where = fieldPath(error.instancePath) || "(the object)";
  switch (error.keyword) {
    case "required":
      return `${where}: required field ${error.params.missingProperty} missing`;
    case "enum":
      return `${where}: must be one of ${error.params.allowedValues.join(", ")}`;
    case "format":
      return `${where}: not a ${error.params.format}`;
    default:
      return `${where}: ${error.message}`;
  }
}

let input = "";
for await (const chunk of process.stdin) {
  input += chunk;
}
const results = [];
for (const object of JSON.parse(input)) {
  const Model = await model(String(object?.apiVersion ?? ""), String(object?.kind ?? ""));
  if (Model === null) {
    results.push([`${object?.apiVersion}/${object?.kind}: no schema in kubernetes-models`]);
    continue;
  }
  try {
    new Model(object).validate();
    results.push([]);
  } catch (e) {
    if (!Array.isArray(e.errors)) {
      throw e;
    }
    // A quantity is a string or a number (oneOf): a bad string also fails the number branch and the
    // oneOf itself, which say nothing more.
    const kept = e.errors.filter((err) => err.keyword !== "oneOf"
      && !(err.keyword === "type" && e.errors.some((o) => o.keyword === "format" && o.instancePath === err.instancePath)));
    results.push([...new Set(kept.map(describe))]);
  }
}
process.stdout.write(JSON.stringify(results));
