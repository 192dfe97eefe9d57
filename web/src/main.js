// The voxterra viewer: the terrain's levels of detail as the server meshes them for this camera,
// dug and raised through the server's validated edits. Message layouts: voxterra-net's view::wire.
import * as THREE from 'three';
import { OrbitControls } from 'three/examples/jsm/controls/OrbitControls.js';

const MESH = 1, DROP = 2, POSES = 3, PIECE = 4, MESH_HEADER = 40, LIQUID = 0x80;
const LEVEL_TINTS = [0xffffff, 0xffb0b0, 0xb0ffb0, 0xb0b0ff, 0xffffb0, 0xffb0ff, 0xb0ffff];

const canvas = document.getElementById('view');
const statusEl = document.getElementById('status');
const figuresEl = document.getElementById('figures');
const radiusEl = document.getElementById('radius');
const tintEl = document.getElementById('tint');

// What tests and curious engineers can read from the console.
const state = { connected: false, hello: null, meshes: 0, triangles: 0, frames: 0, bytes: 0, stats: null, edits: 0, drops: 0, bodies: 0, errors: [] };
window.voxterraView = state;

const renderer = new THREE.WebGLRenderer({ canvas, antialias: true, preserveDrawingBuffer: true });
renderer.setPixelRatio(Math.min(window.devicePixelRatio, 2));
const scene = new THREE.Scene();
scene.background = new THREE.Color(0xb9d3ee);
const camera = new THREE.PerspectiveCamera(60, 1, 0.1, 20000);
scene.add(new THREE.HemisphereLight(0xdde8ff, 0x4a4035, 1.1));
const sun = new THREE.DirectionalLight(0xffffff, 1.6);
sun.position.set(0.4, 1, 0.3);
scene.add(sun);
const controls = new OrbitControls(camera, canvas);
controls.enableDamping = true;

// One material per level, so the tint toggle recolors every node of a level at once.
const levelMaterials = LEVEL_TINTS.map(() => new THREE.MeshLambertMaterial({ vertexColors: true }));
function applyTint() {
  levelMaterials.forEach((m, i) => m.color.setHex(tintEl.checked ? LEVEL_TINTS[i] : 0xffffff));
}
tintEl.addEventListener('change', applyTint);
const waterMaterial = new THREE.MeshLambertMaterial({ vertexColors: true, transparent: true, opacity: 0.6, depthWrite: false });

let palette = new Map();
const meshes = new Map();
const terrainGroup = new THREE.Group();
scene.add(terrainGroup);

function keyOf(bytes, dv) {
  return `${bytes[1]}:${bytes[2]}:${dv.getInt32(4, true)},${dv.getInt32(8, true)},${dv.getInt32(12, true)}`;
}

function removeMesh(key) {
  const old = meshes.get(key);
  if (!old) return;
  terrainGroup.remove(old);
  old.geometry.dispose();
  state.triangles -= old.userData.triangles;
  meshes.delete(key);
}

function octahedral(x, y, out, o) {
  let nx = x / 127, ny = y / 127;
  const nz = 1 - Math.abs(nx) - Math.abs(ny);
  if (nz < 0) {
    const px = (1 - Math.abs(ny)) * Math.sign(nx), py = (1 - Math.abs(nx)) * Math.sign(ny);
    nx = px; ny = py;
  }
  const len = Math.hypot(nx, ny, nz) || 1;
  out[o] = nx / len; out[o + 1] = ny / len; out[o + 2] = nz / len;
}

// A mesh frame (at the start of `buf`) as a geometry with vertex colors.
function meshGeometry(buf) {
  const dv = new DataView(buf);
  const ox = dv.getFloat32(16, true), oy = dv.getFloat32(20, true), oz = dv.getFloat32(24, true);
  const step = dv.getFloat32(28, true);
  const nv = dv.getUint32(32, true), ni = dv.getUint32(36, true);
  const q = new Uint16Array(buf, MESH_HEADER, nv * 3);
  const n = new Int8Array(buf, MESH_HEADER + 6 * nv, 2 * nv);
  const mats = new Uint8Array(buf, MESH_HEADER + 8 * nv, nv);
  const idxAt = (MESH_HEADER + 9 * nv + 3) & ~3;
  const indices = new Uint32Array(buf, idxAt, ni);
  const positions = new Float32Array(nv * 3), normals = new Float32Array(nv * 3), colors = new Float32Array(nv * 3);
  for (let v = 0; v < nv; v++) {
    positions[3 * v] = ox + q[3 * v] * step;
    positions[3 * v + 1] = oy + q[3 * v + 1] * step;
    positions[3 * v + 2] = oz + q[3 * v + 2] * step;
    octahedral(n[2 * v], n[2 * v + 1], normals, 3 * v);
    const c = palette.get(mats[v]) || [1, 0, 1];
    colors[3 * v] = c[0]; colors[3 * v + 1] = c[1]; colors[3 * v + 2] = c[2];
  }
  const g = new THREE.BufferGeometry();
  g.setAttribute('position', new THREE.BufferAttribute(positions, 3));
  g.setAttribute('normal', new THREE.BufferAttribute(normals, 3));
  g.setAttribute('color', new THREE.BufferAttribute(colors, 3));
  g.setIndex(new THREE.BufferAttribute(new Uint32Array(indices), 1));
  g.computeBoundingSphere();
  return { geometry: g, triangles: ni / 3 };
}

function addMesh(buf) {
  const bytes = new Uint8Array(buf);
  const key = keyOf(bytes, new DataView(buf));
  const level = bytes[1];
  const liquid = (bytes[2] & LIQUID) !== 0;
  const { geometry, triangles } = meshGeometry(buf);
  removeMesh(key);
  const mesh = new THREE.Mesh(geometry, liquid ? waterMaterial : levelMaterials[Math.min(level, levelMaterials.length - 1)]);
  mesh.renderOrder = liquid ? 1 : 0;
  mesh.userData.triangles = triangles;
  state.triangles += triangles;
  meshes.set(key, mesh);
  terrainGroup.add(mesh);
  state.meshes = meshes.size;
}

// Bodies: the server simulates them and sends every pose each tick; shapes are unit geometries
// scaled by the half extents (a rock is the unit icosahedron the server's hull is made of).
const BODY_GEOMETRIES = [
  new THREE.SphereGeometry(1, 20, 14),
  new THREE.BoxGeometry(2, 2, 2),
  new THREE.IcosahedronGeometry(1, 0),
  new THREE.BoxGeometry(2, 2, 2),
];
const BODY_MATERIALS = [0xd9534f, 0x5b8def, 0x8a7f74, 0xa0825a].map(
  (c) => new THREE.MeshLambertMaterial({ color: c, flatShading: true }),
);
const bodies = new Map();
// Pieces an edit cut loose: their meshes, by body id, from piece frames.
const pieceGeometries = new Map();
const pieceMaterial = new THREE.MeshLambertMaterial({ vertexColors: true });
const bodyGroup = new THREE.Group();
scene.add(bodyGroup);

function onPoses(buf) {
  const dv = new DataView(buf);
  const count = dv.getUint32(4, true);
  const seen = new Set();
  for (let i = 0, o = 8; i < count; i++, o += 48) {
    const id = dv.getUint32(o, true), shape = Math.min(new Uint8Array(buf)[o + 4], 3);
    const f = (k) => dv.getFloat32(o + 8 + 4 * k, true);
    let mesh = bodies.get(id);
    if (!mesh) {
      const piece = shape === 3 ? pieceGeometries.get(id) : null;
      mesh = piece ? new THREE.Mesh(piece, pieceMaterial) : new THREE.Mesh(BODY_GEOMETRIES[shape], BODY_MATERIALS[shape]);
      mesh.scale.set(f(0), f(1), f(2));
      bodies.set(id, mesh);
      bodyGroup.add(mesh);
    }
    mesh.position.set(f(3), f(4), f(5));
    mesh.quaternion.set(f(6), f(7), f(8), f(9));
    seen.add(id);
  }
  for (const [id, mesh] of bodies) {
    if (!seen.has(id)) {
      bodyGroup.remove(mesh);
      bodies.delete(id);
      const piece = pieceGeometries.get(id);
      if (piece) {
        piece.dispose();
        pieceGeometries.delete(id);
      }
    }
  }
  state.bodies = bodies.size;
  const first = bodies.values().next().value;
  state.firstBody = first ? first.position.toArray() : null;
}

function onHello(h) {
  state.hello = h;
  palette = new Map(h.materials.map((m) => [m.id, m.color.map((c) => Math.pow(c / 255, 2.2))]));
  radiusEl.max = String(Math.max(1, Math.floor(h.max_brush)));
  if (h.world) {
    const [lo, hi] = h.world;
    const c = new THREE.Vector3((lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, (lo[2] + hi[2]) / 2);
    const size = Math.max(hi[0] - lo[0], hi[2] - lo[2]);
    controls.target.copy(c);
    camera.position.set(c.x + size * 0.35, hi[1] + size * 0.25, c.z + size * 0.35);
    camera.far = size * 8;
    camera.updateProjectionMatrix();
  }
  statusEl.textContent = 'connected';
}

function onStats(s) {
  state.stats = s;
  const levels = s.triangles.map((t, i) => `  level ${i}: ${s.nodes[i] ?? 0} nodes, ${t} triangles`).join('\n');
  const answer = (what, r) => (r == null ? '' : `\nlast ${what}: ${'Ok' in r ? 'ok' : r.Err}`);
  const edit = answer('edit', s.last_edit) + answer('drop', s.last_drop);
  figuresEl.textContent =
    `${levels}\nin: ${(s.bytes_per_second / 1024).toFixed(1)} KiB/s\nserver tick: ${s.tick_ms.toFixed(2)} ms (longest ${s.worst_tick_ms.toFixed(1)})\n` +
    `bodies: ${s.awake} awake of ${s.bodies}, contacts ${s.contacts}${edit}`;
}

const token = new URLSearchParams(location.hash.slice(1)).get('token') || '';
const ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`);
ws.binaryType = 'arraybuffer';
ws.onopen = () => {
  state.connected = true;
  ws.send(JSON.stringify({ token }));
};
ws.onclose = (e) => {
  state.connected = false;
  statusEl.textContent = `disconnected${e.reason ? ': ' + e.reason : ''}`;
};
ws.onmessage = (e) => {
  if (typeof e.data === 'string') {
    const m = JSON.parse(e.data);
    if (m.hello) onHello(m.hello);
    else if (m.stats) onStats(m.stats);
    return;
  }
  state.frames += 1;
  state.bytes += e.data.byteLength;
  const kind = new Uint8Array(e.data)[0];
  if (kind === MESH) addMesh(e.data);
  else if (kind === POSES) onPoses(e.data);
  else if (kind === PIECE) {
    const id = new DataView(e.data).getUint32(4, true);
    pieceGeometries.set(id, meshGeometry(e.data.slice(8)).geometry);
  }
  else if (kind === DROP) {
    removeMesh(keyOf(new Uint8Array(e.data), new DataView(e.data)));
    state.meshes = meshes.size;
  }
};

function send(m) {
  if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(m));
}

// The camera goes to the server whenever it moved, at most five times a second, and every few
// seconds regardless (the server drops a page silent for its idle timeout).
let lastSent = null, lastTime = 0;
setInterval(() => {
  if (!state.hello) return;
  const p = camera.position;
  const now = performance.now();
  if (lastSent && lastSent.distanceToSquared(p) < 0.01 && now - lastTime < 5000) return;
  lastSent = p.clone();
  lastTime = now;
  send({ camera: [p.x, p.y, p.z] });
}, 200);

// A click (not a drag) digs where it hits the terrain; with shift, raises.
const raycaster = new THREE.Raycaster();
let down = null;
let pointer = null;

function terrainUnder(clientX, clientY) {
  const r = canvas.getBoundingClientRect();
  const ndc = new THREE.Vector2(((clientX - r.left) / r.width) * 2 - 1, -((clientY - r.top) / r.height) * 2 + 1);
  raycaster.setFromCamera(ndc, camera);
  return raycaster.intersectObjects(terrainGroup.children, false)[0];
}
canvas.addEventListener('pointermove', (e) => { pointer = { x: e.clientX, y: e.clientY }; });
canvas.addEventListener('pointerdown', (e) => { down = { x: e.clientX, y: e.clientY }; });
canvas.addEventListener('pointerup', (e) => {
  if (!down || e.button !== 0 || Math.hypot(e.clientX - down.x, e.clientY - down.y) > 4) return;
  const hit = terrainUnder(e.clientX, e.clientY);
  if (!hit) return;
  state.edits += 1;
  send({ edit: { at: [hit.point.x, hit.point.y, hit.point.z], radius: Number(radiusEl.value), raise: e.shiftKey } });
});
radiusEl.addEventListener('input', () => { document.getElementById('radius-value').textContent = radiusEl.value; });

// WASD/QE fly the camera and its target together.
const keys = new Set();
// 1, 2, 3 drop a ball, a box, a rock above the terrain under the pointer.
const DROPS = { 1: 'ball', 2: 'box', 3: 'rock' };
window.addEventListener('keydown', (e) => {
  keys.add(e.key.toLowerCase());
  const shape = DROPS[e.key];
  if (!shape || !state.hello) return;
  const at = pointer ? terrainUnder(pointer.x, pointer.y) : null;
  const voxel = state.hello.voxel_size;
  const p = at ? at.point.clone().add(new THREE.Vector3(0, 6 * voxel, 0)) : controls.target.clone();
  state.drops += 1;
  send({ drop: { at: [p.x, p.y, p.z], shape } });
});
window.addEventListener('keyup', (e) => keys.delete(e.key.toLowerCase()));
const clock = new THREE.Clock();

function resize() {
  const w = canvas.clientWidth, h = canvas.clientHeight;
  if (canvas.width !== Math.floor(w * renderer.getPixelRatio()) || canvas.height !== Math.floor(h * renderer.getPixelRatio())) {
    renderer.setSize(w, h, false);
    camera.aspect = w / Math.max(h, 1);
    camera.updateProjectionMatrix();
  }
}

renderer.setAnimationLoop(() => {
  const dt = Math.min(clock.getDelta(), 0.1);
  const speed = (state.hello ? state.hello.voxel_size : 1) * 60 * dt;
  const forward = new THREE.Vector3().subVectors(controls.target, camera.position).setY(0).normalize();
  const right = new THREE.Vector3().crossVectors(forward, camera.up).normalize();
  const move = new THREE.Vector3();
  if (keys.has('w')) move.add(forward);
  if (keys.has('s')) move.sub(forward);
  if (keys.has('d')) move.add(right);
  if (keys.has('a')) move.sub(right);
  if (keys.has('e')) move.y += 1;
  if (keys.has('q')) move.y -= 1;
  if (move.lengthSq() > 0) {
    move.normalize().multiplyScalar(speed);
    camera.position.add(move);
    controls.target.add(move);
  }
  resize();
  controls.update();
  renderer.render(scene, camera);
});

window.addEventListener('error', (e) => state.errors.push(String(e.message)));
