// nudge's service worker: it shows the Web Push notifications the daemon sends (when an
// agent needs its operator) and opens the app when one is tapped. It caches nothing.
'use strict';

self.addEventListener('push', (e) => {
  let d = {};
  try { d = e.data ? e.data.json() : {}; } catch (_) { d = { body: e.data ? e.data.text() : '' }; }
  e.waitUntil(self.registration.showNotification(d.title || 'nudge', {
    body: d.body || '', tag: d.workspace || 'nudge', renotify: true, icon: '/icon.svg',
  }));
});

self.addEventListener('notificationclick', (e) => {
  e.notification.close();
  e.waitUntil(self.clients.matchAll({ type: 'window' }).then((ws) => {
    for (const w of ws) if ('focus' in w) return w.focus();
    return self.clients.openWindow('/');
  }));
});
