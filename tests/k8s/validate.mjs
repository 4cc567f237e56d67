// validate.mjs - every document of the given Kubernetes manifests, checked
// against the API's own schemas (npm kubernetes-models, generated from the
// OpenAPI specs; ServiceMonitor from @kubernetes-models/prometheus-operator).
//
//   node validate.mjs NODE_MODULES_DIR FILE...
//
// Prints one JSON line per document: {"file", "doc": <the parsed document>}
// or {"file", "error": "..."}; exits 1 if any document failed.  The checks of
// what jobscope needs of them (hostPID, the mounts, RBAC ...) are the
// caller's (tests/integration/test_k8s_manifests.py).
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const [modules, ...files] = process.argv.slice(2);

// apiVersion -> the package path of its kinds' classes
function modulePath(apiVersion, kind) {
	if (apiVersion === 'monitoring.coreos.com/v1')
		return `@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/${kind}.js`;
	return `kubernetes-models/${apiVersion}/${kind}.js`;
}

async function load(rel) {
	const url = pathToFileURL(path.join(modules, rel)).href;
	return import(url);
}

const yaml = (await load('js-yaml/index.js')).default;
let failed = 0;
for (const file of files) {
	let docs;
	try {
		docs = yaml.loadAll(readFileSync(file, 'utf8')).filter((d) => d !== null);
	} catch (e) {
		console.log(JSON.stringify({ file, error: `YAML: ${e.message}` }));
		failed++;
		continue;
	}
	for (const doc of docs) {
		try {
			if (!doc.apiVersion || !doc.kind)
				throw new Error('no apiVersion or kind');
			let mod;
			try {
				mod = await load(modulePath(doc.apiVersion, doc.kind));
			} catch (e) {
				throw new Error(`no schema for ${doc.apiVersion} ${doc.kind}`);
			}
			new mod[doc.kind](doc).validate();
			console.log(JSON.stringify({ file, doc }));
		} catch (e) {
			const where = `${doc?.kind ?? '?'} ${doc?.metadata?.name ?? '?'}`;
			console.log(JSON.stringify({ file, error: `${where}: ${e.message}` }));
			failed++;
		}
	}
}
process.exit(failed ? 1 : 0);
