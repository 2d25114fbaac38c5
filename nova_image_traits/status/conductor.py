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
"""Which conductors run on this host, and with which launcher.

Nothing a user can write is trusted: not a configuration file, a pid file
or an environment variable. The kernel's process table is read instead:
for every process under ``/proc``, its owner (the owner of
``/proc/<pid>``) and its command line (``/proc/<pid>/cmdline``). Only
processes owned by root or by the ``nova`` user count, so another user
cannot fake a conductor by naming a process ``nova-image-traits-conductor``.
A process is a conductor when its program, or the script its interpreter
runs (``python3 /usr/bin/nova-conductor``), is named ``nova-conductor``
(without the hook) or ``nova-image-traits-conductor`` (with it).

A running service does not keep that command line: oslo.service (through
cotyledon) rewrites the title of the parent and of each worker, so that
``/proc/<pid>/cmdline`` holds one string: for the parent,
``nova-image-traits-conductor: master process [<the command line>]``, and
for a worker, ``nova-image-traits-conductor: ServiceWrapper worker(0)``,
the name before the colon being the base name of the program that was
started. Both forms are recognised.

Conductors in containers of their own PID namespace are not visible; run
the check inside the conductor's container then.
"""

import collections
import os
import pwd

#: Program names and whether they run the rebuild hook.
HOOKED = 'nova-image-traits-conductor'
PLAIN = 'nova-conductor'
#: The conductors' program names; :func:`find` looks for others on demand.
CONDUCTORS = (HOOKED, PLAIN)
#: nova's scheduler, whose ``[filter_scheduler]`` :mod:`.filters` compares.
SCHEDULER = 'nova-scheduler'
#: Users whose processes are trusted, besides root.
TRUSTED_USERS = ('nova',)

#: ``argv`` is the command line as the kernel shows it, rewritten or not.
Conductor = collections.namedtuple('Conductor', ['pid', 'uid', 'hooked',
                                                 'argv'])


def trusted_uids(users=TRUSTED_USERS):
    """Root's UID and the UIDs of ``users`` that exist here."""
    uids = {0}
    for user in users:
        try:
            uids.add(pwd.getpwnam(user).pw_uid)
        except KeyError:
            pass
    return uids


def _program(argv, names=CONDUCTORS):
    """The launcher a command line runs: one of ``names``, or None."""
    if len(argv) == 1:
        # A title set by oslo.service: "<program>: master process [...]"
        # or "<program>: <service> worker(<n>)".
        name, sep, _rest = argv[0].partition(': ')
        if sep and name in names:
            return name
    for arg in argv[:2]:
        name = os.path.basename(arg)
        if name in names:
            return name
        if not name.startswith('python'):
            # Only an interpreter's first argument is its script.
            return None
    return None


def find(proc='/proc', uids=None, names=CONDUCTORS):
    """Return the :class:`Conductor` processes of this host.

    :param proc: where the process table is mounted
    :param uids: the trusted owners; root and ``nova`` by default
    :param names: the programs looked for: the conductors by default,
        ``(SCHEDULER,)`` for the schedulers (never ``hooked``)
    """
    uids = trusted_uids() if uids is None else set(uids)
    found = []
    try:
        entries = os.listdir(proc)
    except OSError:
        return found
    for pid in sorted(int(e) for e in entries if e.isdigit()):
        path = os.path.join(proc, str(pid))
        try:
            uid = os.stat(path).st_uid
            with open(os.path.join(path, 'cmdline'), 'rb') as f:
                raw = f.read()
        except OSError:
            # Gone meanwhile, or not ours to read.
            continue
        argv = [a.decode('utf-8', 'replace')
                for a in raw.split(b'\0') if a]
        program = _program(argv, names)
        if program is None or uid not in uids:
            continue
        found.append(Conductor(pid=pid, uid=uid,
                               hooked=program == HOOKED, argv=argv))
    return found
