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
"""``nova-image-traits``: compare strategies, check and audit servers.

A cliff application. Its commands are the entry points of the namespace
``nova_image_traits.cli`` (setup.cfg).
"""

import importlib.metadata
import logging
import sys

from cliff import app
from cliff import commandmanager

from nova_image_traits import cli

#: Console log level per ``-q``/``-v`` count. Decision lines are INFO.
_LEVELS = {0: logging.ERROR, 1: logging.WARNING, 2: logging.INFO}
#: Chatty libraries and the level they are kept at below ``-vvv``.
#: openstacksdk warns when the catalog has no image service, which is
#: expected: ``check`` and ``audit`` then read images through nova.
_QUIET = {'keystoneauth': logging.WARNING, 'stevedore': logging.WARNING,
          'urllib3': logging.WARNING, 'openstack': logging.ERROR,
          'placement': logging.WARNING, 'oslo_policy': logging.WARNING,
          'oslo_db': logging.WARNING, 'alembic': logging.WARNING}


class NovaImageTraitsApp(app.App):
    """The application.

    :param connection: an ``openstack.connection.Connection`` that ``check``
        and ``audit`` use instead of building one from the ``--os-*``
        options (for embedding and tests)
    """

    NAME = 'nova-image-traits'
    LOG = logging.getLogger(NAME)

    def __init__(self, connection=None, stdin=None, stdout=None,
                 stderr=None):
        self.connection = connection
        self.argv = []
        self._handlers = []
        self._levels = {}
        super().__init__(
            description=__doc__.strip().splitlines()[0].replace('``', ''),
            version=importlib.metadata.version('nova-image-traits'),
            command_manager=commandmanager.CommandManager(cli.NAMESPACE),
            stdin=stdin, stdout=stdout, stderr=stderr, deferred_help=True)

    def build_option_parser(self, description, version,
                            argparse_kwargs=None):
        parser = super().build_option_parser(description, version,
                                             argparse_kwargs)
        # NOTE(founders): as with the openstack client, the cloud may be named
        # before the command; the commands that talk to a cloud accept it after
        # the command too.
        parser.add_argument(
            '--os-cloud', metavar='CLOUD', default=None,
            help='The cloud of clouds.yaml to use (check and audit).')
        return parser

    def run(self, argv):
        # The --os-* options a command registers depend on the auth type
        # the arguments name; openstacksdk peeks at them.
        self.argv = list(argv)
        try:
            return super().run(argv)
        finally:
            self._remove_handlers()

    def configure_logging(self):
        """Log to stderr: errors and warnings, INFO with -v, DEBUG -vv."""
        level = _LEVELS.get(self.options.verbose_level, logging.DEBUG)
        root = logging.getLogger()
        self._levels = {None: root.level}
        if root.level == logging.NOTSET or root.level > level:
            root.setLevel(level)
        handlers = [logging.StreamHandler(self.stderr)]
        handlers[0].setLevel(level)
        handlers[0].setFormatter(logging.Formatter(
            '%(message)s' if level > logging.DEBUG else
            '%(levelname)s %(name)s %(message)s'))
        if self.options.log_file:
            handlers.append(logging.FileHandler(self.options.log_file))
            handlers[-1].setFormatter(
                logging.Formatter(self.LOG_FILE_MESSAGE_FORMAT))
        for handler in handlers:
            root.addHandler(handler)
        self._handlers = handlers
        if self.options.verbose_level < 4:
            for name, quiet in _QUIET.items():
                self._levels[name] = logging.getLogger(name).level
                logging.getLogger(name).setLevel(quiet)

    def _remove_handlers(self):
        # NOTE(founders): main() may run many times in one process (tests,
        # embedding): leave logging as it was found.
        root = logging.getLogger()
        for handler in self._handlers:
            root.removeHandler(handler)
            handler.close()
        for name, level in self._levels.items():
            logging.getLogger(name).setLevel(level)
        self._handlers, self._levels = [], {}


def main(argv=None, **kwargs):
    """Run ``nova-image-traits``; return its exit code.

    :param argv: the arguments, ``sys.argv[1:]`` by default
    :param kwargs: passed to :class:`NovaImageTraitsApp` (``stdout``,
        ``stderr``, ``connection``)
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    return NovaImageTraitsApp(**kwargs).run(argv)


if __name__ == '__main__':
    sys.exit(main())
