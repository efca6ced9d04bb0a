package web

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrNeedToken refuses to serve on a non-loopback address without a token.
var ErrNeedToken = errors.New("a non-loopback address needs a token")

// CheckAddr reports whether the server may listen on addr (host:port)
// with token: any address with a token, only loopback without one. An
// empty host or an unspecified one (0.0.0.0, ::) listens everywhere.
func CheckAddr(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if _, perr := strconv.ParseUint(addr, 10, 16); err != nil && perr == nil {
		return fmt.Errorf("address %q is a port without a host: write 127.0.0.1:%s (this machine only) or :%s (every interface, with a token)", addr, addr, addr)
	}
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if token != "" || Loopback(host) {
		return nil
	}
	return fmt.Errorf("%s: %w (--token or ARBOR_SERVE_TOKEN), or listen on 127.0.0.1", addr, ErrNeedToken)
}

// Loopback reports whether host names only this machine.
func Loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

const cookieName = "arbor_token"

// authorized reports whether r carries the token: an Authorization
// Bearer header, the cookie, or ?token= (which the caller turns into the
// cookie, so a link printed once keeps working without the token in
// every URL).
func (s *Server) authorized(r *http.Request) (ok, fromQuery bool) {
	if s.o.Token == "" {
		return true, false
	}
	if h, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found && s.same(h) {
		return true, false
	}
	if c, err := r.Cookie(cookieName); err == nil && s.same(c.Value) {
		return true, false
	}
	if q := r.URL.Query().Get("token"); q != "" && s.same(q) {
		return true, true
	}
	return false, false
}

func (s *Server) same(got string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.o.Token)) == 1
}

// withAuth answers 401 to requests without the token.
func (s *Server) withAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok, fromQuery := s.authorized(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="arbor"`)
			if strings.HasPrefix(r.URL.Path, "/api/") {
				writeError(w, http.StatusUnauthorized, errors.New("missing or wrong token"))
			} else {
				http.Error(w, "401 unauthorized: open the link arbor serve printed (it carries the token)", http.StatusUnauthorized)
			}
			return
		}
		if fromQuery {
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.o.Token, Path: "/", HttpOnly: true,
				SameSite: http.SameSiteStrictMode, Expires: time.Now().Add(30 * 24 * time.Hour)})
		}
		next.ServeHTTP(w, r)
	})
}
