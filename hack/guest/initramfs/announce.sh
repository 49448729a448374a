# shellcheck shell=dash
# (busybox ash and dash both have "local")
# announce LINE: prints LINE on /dev/console, and on ttyS0 too when the preferred console is
# another one (console=ttyS0 console=tty0), because readers of the serial port wait for the
# guest's marker lines. Sourced by /init and the power button handler.
announce() {
  echo "$1" > /dev/console
  local active
  active=$(cat /sys/class/tty/console/active 2>/dev/null)
  case " $active" in
    *" ttyS0") ;;
    *" ttyS0 "*) echo "$1" > /dev/ttyS0 2>/dev/null ;;
  esac
}
