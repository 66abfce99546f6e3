/* A PEP 523 frame evaluator for `python -m bench.attribution`: callgrind collects only while
   the innermost Python frame belongs to the chosen components (`classify(code)` names a code
   object's component; a negative one counts to its caller's). Every Python call then goes
   through this function (about 10% more instructions in all, spread over the components). */
#define PY_SSIZE_T_CLEAN
#define Py_BUILD_CORE_MODULE
#include <Python.h>
#include "internal/pycore_frame.h"
#include <valgrind/callgrind.h>

static int current = 0;
static unsigned long long mask = 0;
static int collecting = 0;
static int classifying = 0;
static PyObject *cache = NULL;
static PyObject *classify = NULL;

static inline void set_collect(int comp) {
    int want = (mask >> comp) & 1ULL;
    if (want != collecting) { CALLGRIND_TOGGLE_COLLECT; collecting = want; }
}

static PyObject *evalf(PyThreadState *ts, _PyInterpreterFrame *frame, int throwflag) {
    if (collecting) { CALLGRIND_TOGGLE_COLLECT; collecting = 0; }
    int outer = current;
    if (!classifying) {
        PyObject *code = (PyObject *)frame->f_code;
        PyObject *found = PyDict_GetItem(cache, code);
        long comp;
        if (found == NULL) {
            classifying = 1;
            PyObject *r = PyObject_CallOneArg(classify, code);
            classifying = 0;
            if (r == NULL) { PyErr_Print(); comp = -1; }
            else { PyDict_SetItem(cache, code, r); comp = PyLong_AsLong(r); Py_DECREF(r); }
        } else {
            comp = PyLong_AsLong(found);
        }
        if (comp >= 0) current = (int)comp;
        set_collect(current);
    }
    PyObject *result = _PyEval_EvalFrameDefault(ts, frame, throwflag);
    if (collecting) { CALLGRIND_TOGGLE_COLLECT; collecting = 0; }
    current = outer;
    if (!classifying) set_collect(current);
    return result;
}

static PyObject *start(PyObject *self, PyObject *args) {
    unsigned long long m; PyObject *fn; int b;
    if (!PyArg_ParseTuple(args, "KOi", &m, &fn, &b)) return NULL;
    mask = m; current = b;
    Py_XINCREF(fn); classify = fn;
    if (cache == NULL) cache = PyDict_New();
    _PyInterpreterState_SetEvalFrameFunc(PyInterpreterState_Get(), evalf);
    set_collect(current);
    Py_RETURN_NONE;
}

static PyObject *stop(PyObject *self, PyObject *args) {
    if (collecting) { CALLGRIND_TOGGLE_COLLECT; collecting = 0; }
    _PyInterpreterState_SetEvalFrameFunc(PyInterpreterState_Get(), _PyEval_EvalFrameDefault);
    mask = 0;
    Py_RETURN_NONE;
}

static PyObject *dump(PyObject *self, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
    CALLGRIND_DUMP_STATS_AT(name);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"dump", dump, METH_VARARGS, NULL},
    {"start", start, METH_VARARGS, NULL}, {"stop", stop, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "frames", NULL, -1, methods};
PyMODINIT_FUNC PyInit_frames(void) { return PyModule_Create(&mod); }
