package web

import (
	"embed"
	"io/fs"
	"net/http"
)

// The app: plain HTML, CSS and JavaScript written for nudge, no third-party code and no
// build step.
//
//go:embed assets
var assets embed.FS

// assetHandler serves the app's files; every other path is the app's page (its own
// router reads the path: /, /pair).
func assetHandler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err)
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		switch r.URL.Path {
		case "/app.js", "/app.css", "/icon.svg", "/manifest.json", "/sw.js":
			w.Header().Set("Cache-Control", "no-cache")
			files.ServeHTTP(w, r)
		default:
			w.Header().Set("Cache-Control", "no-store")
			http.ServeFileFS(w, r, sub, "index.html")
		}
	})
}
