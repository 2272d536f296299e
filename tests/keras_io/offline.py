"""No network for the scripts the runners run: URLs are answered with `standins`' files, and
any connection fails at once.

`install()` sets up, in the running process,
- an opener for `urllib.request.urlopen` (used by `urlretrieve`, hence by every
  `keras.utils.get_file`, and by pandas' and numpy's readers of URLs) whose http, https and
  ftp handlers serve `standins.content(url)`, or fail with `URLError` for a URL without one;
- the same for `requests`, when it can be imported (its HTTP adapter's `send`);
- `socket.socket.connect` raising `OSError`, for every other way out.
"""
import email.message
import importlib.util
import io
import socket
import urllib.error
import urllib.request
import urllib.response

import standins


def _refuse(self, address):
    raise OSError('offline: no connection to %r (a stand-in serves known URLs only).'
                  % (address,))


def _headers(size):
    headers = email.message.Message()
    headers['Content-Length'] = str(size)
    headers['Content-Type'] = 'application/octet-stream'
    return headers


class StandInHandler(urllib.request.BaseHandler):
    """urllib's handler of http, https and ftp URLs: the stand-in's bytes, or `URLError`."""
    handler_order = 100  # before urllib's own HTTP handlers

    def _serve(self, request):
        url = request.full_url
        try:
            data = standins.content(url)
        except KeyError as error:
            raise urllib.error.URLError('offline: %s' % error.args[0])
        response = urllib.response.addinfourl(io.BytesIO(data), _headers(len(data)), url, 200)
        response.msg = 'OK'
        return response

    http_open = https_open = ftp_open = _serve


def _requests_send(adapter, request, **kwargs):
    import requests
    try:
        data = standins.content(request.url)
    except KeyError as error:
        raise requests.exceptions.ConnectionError('offline: %s' % error.args[0],
                                                  request=request)
    response = requests.models.Response()
    response.status_code, response.url, response.request = 200, request.url, request
    response.headers['Content-Length'] = str(len(data))
    response.raw = io.BytesIO(data)
    response.encoding = None
    return response


def install():
    """Makes this process offline, with the stand-ins served (see the module's doc)."""
    urllib.request.install_opener(urllib.request.build_opener(StandInHandler))
    if importlib.util.find_spec('requests') is not None:
        import requests.adapters
        requests.adapters.HTTPAdapter.send = _requests_send
    socket.socket.connect = _refuse
