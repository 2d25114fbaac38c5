# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""The check of the nova-api pre-check: where it is, and this nova.

It reads nova-api's ``api-paste.ini`` (``[wsgi] api_paste_config``, found
as nova finds it) and, when the pre-check's filter is in it, checks that
every compute API pipeline has it after the filter that sets the request
context (``keystonecontext``, or ``noauth2``), and that the installed nova
has what the pre-check relies on (:mod:`nova_image_traits.api.compat`).
"""

import configparser
import os

from oslo_config import cfg
from oslo_upgradecheck import upgradecheck

from nova_image_traits import exception

Code = upgradecheck.Code
Result = upgradecheck.Result

FACTORY = 'nova_image_traits.api.precheck:RebuildPrecheck.factory'
#: The filters that put ``nova.context`` in the environ.
CONTEXT_FILTERS = ('keystonecontext', 'noauth2')

_WSGI_OPTS = [cfg.StrOpt('api_paste_config', default='api-paste.ini',
                         help="nova's [wsgi] api_paste_config.")]


def register_opts(conf):
    """Register nova's ``[wsgi] api_paste_config`` on ``conf``."""
    conf.register_opts(_WSGI_OPTS, group='wsgi')


def find_paste(conf):
    """The path of nova-api's api-paste.ini, or None."""
    name = conf.wsgi.api_paste_config
    if os.path.isabs(name):
        return name if os.path.exists(name) else None
    return conf.find_file(name)


def misplaced(text):
    """Where the pre-check's filter is in ``text`` (an api-paste.ini).

    :returns: ``(names, problems)``: the filter's section names (none when
        the pre-check is not configured) and one sentence per pipeline
        that lacks it or has it before its request context
    """
    parser = configparser.RawConfigParser(strict=False)
    parser.read_string(text)
    names = [section.split(':', 1)[1].strip()
             for section in parser.sections()
             if section.startswith('filter:') and
             parser.get(section, 'paste.filter_factory',
                        fallback='').strip() == FACTORY]
    problems = []
    if not names:
        return names, problems
    for section in parser.sections():
        if not section.startswith(('composite:', 'pipeline:')):
            continue
        for key, value in parser.items(section):
            parts = value.split()
            ctx = [i for i, p in enumerate(parts) if p in CONTEXT_FILTERS]
            if not ctx or 'osapi_compute_app_v21' not in parts:
                continue
            where = '%s %s' % (section, key)
            found = [i for i, p in enumerate(parts) if p in names]
            if not found:
                problems.append('%s has no %s: its rebuilds are decided by '
                                'the conductor alone.' % (where, names[0]))
            elif found[0] < ctx[0]:
                problems.append('%s has %s before %s, which sets the '
                                'request context: it decides nothing '
                                'there.' % (where, parts[found[0]],
                                            parts[ctx[0]]))
    return names, problems


def check_precheck(conf):
    """Is the pre-check in every compute pipeline, and can it run here?"""
    path = find_paste(conf)
    if path is None:
        return Result(Code.SUCCESS, (
            'No api-paste.ini found for [wsgi] api_paste_config = %s on '
            'this host: run the check where nova-api runs to check the '
            'pre-check.' % conf.wsgi.api_paste_config))
    try:
        with open(path) as f:
            names, problems = misplaced(f.read())
    except (OSError, configparser.Error) as e:
        return Result(Code.WARNING, 'Cannot read %s: %s' % (path, e))
    if not names:
        return Result(Code.SUCCESS, (
            '%s has no image_traits_precheck filter: the conductor hook '
            '(or ImageTraitsFilter) decides every rebuild.' % path))
    details = ['%s: %s' % (path, p) for p in problems]
    code = Code.WARNING if problems else Code.SUCCESS
    try:
        from nova_image_traits.api import compat
        compat.verify()
        details.append('The pre-check matches the installed nova (%s).'
                       % compat.conductor_compat.nova_version())
    except ImportError as e:
        details.append('nova is not installed here, so the pre-check cannot '
                       'be verified (%s).' % e)
    except exception.NovaImageTraitsException as e:
        code = Code.FAILURE
        details.append('%s [image_traits] precheck_on_unsupported_nova = '
                       '%s.' % (e.message,
                                conf.image_traits
                                .precheck_on_unsupported_nova))
    if not problems:
        details.insert(0, '%s has the pre-check after the request context '
                          'in every compute pipeline.' % path)
    return Result(code, ' '.join(details))
